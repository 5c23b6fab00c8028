"""Attempt 19 at SelfAttention_v1.

MISTAKE: The parameters are created with torch.randn instead of torch.rand as the docstring asks, so after torch.manual_seed(123) the weights (and the lesson's expected output) differ.
"""
import math
import torch
from torch import nn


class SelfAttention_v1(nn.Module):
    """MISTAKE: The parameters are created with torch.randn instead of torch.rand as the docstring asks, so after torch.manual_seed(123) the weights (and the lesson's expected output) differ."""

    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.randn(d_in, d_out))
        self.W_key = nn.Parameter(torch.randn(d_in, d_out))
        self.W_value = nn.Parameter(torch.randn(d_in, d_out))

    def forward(self, x):
        q = x @ self.W_query
        k = x @ self.W_key
        v = x @ self.W_value
        return scaled_dot_product_attention(q, k, v)
