"""Attempt 25 at SelfAttention_v2.

MISTAKE: forward computes x @ layer.weight instead of calling the layer (x @ weight.T): nn.Linear's weight is [d_out, d_in], so this raises when d_in != d_out (and is wrong when square).
"""
import math
import torch
from torch import nn


class SelfAttention_v2(nn.Module):
    """MISTAKE: forward computes x @ layer.weight instead of calling the layer (x @ weight.T): nn.Linear's weight is [d_out, d_in], so this raises when d_in != d_out (and is wrong when square)."""

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        q = x @ self.W_query.weight
        k = x @ self.W_key.weight
        v = x @ self.W_value.weight
        return scaled_dot_product_attention(q, k, v)
