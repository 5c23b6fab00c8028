"""Attempt 24 at SelfAttention_v1.

MISTAKE: W_query, W_key, W_value are plain torch.rand tensors, not wrapped in nn.Parameter, so the module does not register them (no parameters, not in state_dict, not trained).
"""
import math
import torch
from torch import nn


class SelfAttention_v1(nn.Module):
    """MISTAKE: W_query, W_key, W_value are plain torch.rand tensors, not wrapped in nn.Parameter, so the module does not register them (no parameters, not in state_dict, not trained)."""

    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = torch.rand(d_in, d_out)
        self.W_key = torch.rand(d_in, d_out)
        self.W_value = torch.rand(d_in, d_out)

    def forward(self, x):
        q = x @ self.W_query
        k = x @ self.W_key
        v = x @ self.W_value
        return scaled_dot_product_attention(q, k, v)
