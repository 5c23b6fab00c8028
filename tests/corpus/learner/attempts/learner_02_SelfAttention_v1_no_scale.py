"""SelfAttention_v1: wrote the attention by hand in forward and forgot the 1/sqrt(d_k) scale"""
import torch
from torch import nn


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        queries = x @ self.W_query
        keys = x @ self.W_key
        values = x @ self.W_value
        scores = queries @ keys.T
        weights = torch.softmax(scores, dim=-1)
        return weights @ values
