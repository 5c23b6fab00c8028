"""SelfAttention_v1: created the matrices in nn.Linear's [d_out, d_in] layout and applied x @ W.T, instead of [d_in, d_out] and x @ W."""
import torch
from torch import nn


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_out, d_in))
        self.W_key = nn.Parameter(torch.rand(d_out, d_in))
        self.W_value = nn.Parameter(torch.rand(d_out, d_in))

    def forward(self, x):
        q = x @ self.W_query.T
        k = x @ self.W_key.T
        v = x @ self.W_value.T
        return scaled_dot_product_attention(q, k, v)
