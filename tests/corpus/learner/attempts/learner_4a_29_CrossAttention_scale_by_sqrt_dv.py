"""Attempt 29 at CrossAttention.

MISTAKE: Hand-written attention divides the scores by sqrt(d_v) (v.shape[-1]) instead of sqrt(d_k): the scale must use the key size.
"""
import math
import torch
from torch import nn


class CrossAttention(nn.Module):
    """MISTAKE: Hand-written attention divides the scores by sqrt(d_v) (v.shape[-1]) instead of sqrt(d_k): the scale must use the key size."""

    def __init__(self, d_in_q, d_in_kv, d_k, d_v, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in_q, d_k, bias=qkv_bias)
        self.W_key = nn.Linear(d_in_kv, d_k, bias=qkv_bias)
        self.W_value = nn.Linear(d_in_kv, d_v, bias=qkv_bias)

    def forward(self, x_q, x_kv):
        q = self.W_query(x_q)
        k = self.W_key(x_kv)
        v = self.W_value(x_kv)
        w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(v.shape[-1]), dim=-1)
        return w @ v
