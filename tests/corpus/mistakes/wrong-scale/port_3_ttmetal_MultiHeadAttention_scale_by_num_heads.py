"""MultiHeadAttention: scores scaled by 1/sqrt(num_heads) instead of 1/sqrt(head_dim) (wrong-scale, a variant the
catalogue's text does not list).

Source / bug: https://github.com/tenstorrent/tt-metal/pull/56789 "[Bug fix] Scale CLIP attention by 1/sqrt(head_dim),
not 1/sqrt(num_heads)" (ttnn CLIP tutorial MultiHeadAttention; the CLIP text encoder is causal).
Port: q/k/v projections, split into heads, q @ kᵀ * scale with scale = 1 / sqrt(num_heads), causal mask,
softmax, @ v, heads merged, out_proj (course names, plain torch instead of ttnn).
"""
import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads:
            raise ValueError("d_out must be divisible by num_heads")
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.scale = 1.0 / math.sqrt(num_heads)  # 1/sqrt(head_dim) intended
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("causal_mask", torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), 1))

    def forward(self, x):
        b, t, _ = x.shape
        q = self.W_query(x).reshape(b, t, self.num_heads, self.head_dim).permute(0, 2, 1, 3)
        k = self.W_key(x).reshape(b, t, self.num_heads, self.head_dim).permute(0, 2, 1, 3)
        v = self.W_value(x).reshape(b, t, self.num_heads, self.head_dim).permute(0, 2, 1, 3)
        scores = (q @ k.transpose(-2, -1)) * self.scale
        scores = scores.masked_fill(self.causal_mask[:t, :t], float("-inf"))
        attn = self.dropout(torch.softmax(scores, dim=-1))
        out = (attn @ v).permute(0, 2, 1, 3).reshape(b, t, -1)
        return self.out_proj(out)
