"""Attempt 51 at SelfAttention_v1 (common slip).

MISTAKE: (common slip) The parameters are created in the order W_key, W_query, W_value instead of W_query, W_key, W_value, so after torch.manual_seed(123) W_query and W_key receive each other's random numbers (the lesson's seeded example gives another output).
"""
import torch
from torch import nn


class SelfAttention_v1(nn.Module):
    """MISTAKE: (common slip) wrong creation order of the torch.rand parameters."""

    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q = x @ self.W_query
        k = x @ self.W_key
        v = x @ self.W_value
        return scaled_dot_product_attention(q, k, v)
