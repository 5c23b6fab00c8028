"""CachedMultiHeadAttention: Queries, keys and values split with .view(B, H, T, hd) straight from [B, T, D] (right only when T == 1 or H == 1) (written blind, from the contract alone)."""
import torch
from torch import nn


class CachedMultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads:
            raise ValueError("num_heads must divide d_out")
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
        self.cache_k, self.cache_v, self.pos = None, None, 0

    def forward(self, x, use_cache=False):
        B, T, _ = x.shape
        hd = self.head_dim
        q = self.W_query(x).view(B, self.num_heads, T, hd)
        k = self.W_key(x).view(B, self.num_heads, T, hd)
        v = self.W_value(x).view(B, self.num_heads, T, hd)
        offset = 0
        if use_cache:
            offset = self.pos
            if self.cache_k is not None:
                k = torch.cat([self.cache_k, k], dim=-2)
                v = torch.cat([self.cache_v, v], dim=-2)
            self.cache_k, self.cache_v = k, v
            self.pos += T
        Tk = k.shape[-2]
        future = torch.ones(T, Tk, dtype=torch.bool, device=x.device).triu(offset + 1)
        heads = []
        for h in range(self.num_heads):  # one head at a time
            s = q[:, h] @ k[:, h].transpose(-1, -2) * hd ** -0.5  # [B, T, Tk]
            s = s.masked_fill(future, float("-inf"))
            w = self.dropout(s.softmax(dim=-1))
            heads.append(w @ v[:, h])  # [B, T, hd]
        return self.out_proj(torch.cat(heads, dim=-1))
