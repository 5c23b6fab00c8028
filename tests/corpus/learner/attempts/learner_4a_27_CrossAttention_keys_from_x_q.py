"""Attempt 27 at CrossAttention.

MISTAKE: Copy-paste from self-attention: the keys are computed from x_q (self.W_key(x_q)) instead of x_kv.
"""
import math
import torch
from torch import nn


class CrossAttention(nn.Module):
    """MISTAKE: Copy-paste from self-attention: the keys are computed from x_q (self.W_key(x_q)) instead of x_kv."""

    def __init__(self, d_in_q, d_in_kv, d_k, d_v, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in_q, d_k, bias=qkv_bias)
        self.W_key = nn.Linear(d_in_kv, d_k, bias=qkv_bias)
        self.W_value = nn.Linear(d_in_kv, d_v, bias=qkv_bias)

    def forward(self, x_q, x_kv):
        return scaled_dot_product_attention(self.W_query(x_q), self.W_key(x_q), self.W_value(x_kv))
