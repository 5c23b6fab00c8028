"""Attempt 20 at SelfAttention_v2.

MISTAKE: nn.Linear(d_in, d_out) is created without bias=qkv_bias, so the layers get biases by default (True) even when qkv_bias=False.
"""
import math
import torch
from torch import nn


class SelfAttention_v2(nn.Module):
    """MISTAKE: nn.Linear(d_in, d_out) is created without bias=qkv_bias, so the layers get biases by default (True) even when qkv_bias=False."""

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out)
        self.W_key = nn.Linear(d_in, d_out)
        self.W_value = nn.Linear(d_in, d_out)

    def forward(self, x):
        return scaled_dot_product_attention(self.W_query(x), self.W_key(x), self.W_value(x))
