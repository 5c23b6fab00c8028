"""CachedMultiHeadAttention: reset_cache only rewinds the position; the old sequence's keys and values stay cached."""
import torch
from torch import nn


class CachedMultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError("d_out must be divisible by num_heads")
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.cache_k = None
        self.cache_v = None
        self.pos = 0

    def reset_cache(self):
        self.pos = 0  # start writing the next sequence from position 0

    def forward(self, x, use_cache=False):
        b, t, _ = x.shape
        q = self.W_query(x).view(b, t, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.W_key(x).view(b, t, self.num_heads, self.head_dim).transpose(1, 2)
        v = self.W_value(x).view(b, t, self.num_heads, self.head_dim).transpose(1, 2)
        start = 0
        if use_cache:
            if self.cache_k is not None:
                k = torch.cat([self.cache_k, k], dim=2)
                v = torch.cat([self.cache_v, v], dim=2)
            self.cache_k, self.cache_v = k, v
            start = self.pos
            self.pos += t
        mask = sliding_window_mask(t, k.shape[2], None, q_start=start, device=x.device)
        scores = q @ k.transpose(-2, -1) / self.head_dim ** 0.5
        weights = self.dropout(torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1))
        return self.out_proj((weights @ v).transpose(1, 2).reshape(b, t, -1))
