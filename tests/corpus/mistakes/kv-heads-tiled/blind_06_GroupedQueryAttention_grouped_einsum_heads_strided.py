"""GroupedQueryAttention: Grouped einsum where the query features are reshaped as (S, G, hd) instead of (G, S, hd) (and merged back the same way), so query head h uses group h % G: the tiled assignment (written blind, from the contract alone)."""
import math

import torch
from torch import nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_in, d_out, dropout, num_heads, num_kv_groups, dtype=None, qkv_bias=False):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError("d_out must be divisible by num_heads")
        if num_heads % num_kv_groups != 0:
            raise ValueError("num_heads must be divisible by num_kv_groups")
        self.d_out = d_out
        self.num_heads = num_heads
        self.num_kv_groups = num_kv_groups
        self.group_size = num_heads // num_kv_groups
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias, dtype=dtype)
        self.W_key = nn.Linear(d_in, num_kv_groups * self.head_dim, bias=qkv_bias, dtype=dtype)
        self.W_value = nn.Linear(d_in, num_kv_groups * self.head_dim, bias=qkv_bias, dtype=dtype)
        self.out_proj = nn.Linear(d_out, d_out, bias=False, dtype=dtype)
        self.dropout = nn.Dropout(dropout)
        self.reset_cache()

    def reset_cache(self):
        self.cache_k, self.cache_v = None, None
        self.seen = 0

    def forward(self, x, use_cache=False):
        B, T, _ = x.shape
        G, S, hd = self.num_kv_groups, self.group_size, self.head_dim
        # queries [B, G, S, T, hd]: the S query heads of group g are heads g, g+G, g+2G, ...
        q = self.W_query(x).reshape(B, T, S, G, hd).permute(0, 3, 2, 1, 4)
        k = self.W_key(x).reshape(B, T, G, hd).permute(0, 2, 1, 3)  # [B, G, T, hd]
        v = self.W_value(x).reshape(B, T, G, hd).permute(0, 2, 1, 3)
        first = 0
        if use_cache:
            first = self.seen
            if self.cache_k is not None:
                k = torch.cat((self.cache_k, k), dim=2)
                v = torch.cat((self.cache_v, v), dim=2)
            self.cache_k, self.cache_v = k, v
            self.seen += T
        scores = torch.einsum("bgsqd,bgkd->bgsqk", q, k) / math.sqrt(hd)
        hidden = torch.arange(k.shape[2], device=x.device)[None, :] > torch.arange(first, first + T, device=x.device)[:, None]
        scores = scores.masked_fill(hidden, float("-inf"))
        weights = self.dropout(torch.softmax(scores, dim=-1))
        ctx = torch.einsum("bgsqk,bgkd->bqsgd", weights, v)  # [B, T, S, G, hd]
        return self.out_proj(ctx.reshape(B, T, self.d_out))
