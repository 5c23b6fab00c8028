"""CachedMultiHeadAttention: under the kv cache the mask is cut as mask[:num_tokens, :num_tokens], neither offset to the new tokens' positions nor widened to the cached keys (https://github.com/rasbt/LLMs-from-scratch/pull/697)"""
import torch
from torch import nn


class CachedMultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.d_out, self.num_heads, self.head_dim = d_out, num_heads, d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1), persistent=False)
        self.cache_k = self.cache_v = None

    def reset_cache(self):
        self.cache_k = self.cache_v = None

    def forward(self, x, use_cache=False):
        b, num_tokens, _ = x.shape
        k = self.W_key(x).view(b, num_tokens, self.num_heads, self.head_dim)
        v = self.W_value(x).view(b, num_tokens, self.num_heads, self.head_dim)
        q = self.W_query(x).view(b, num_tokens, self.num_heads, self.head_dim)
        if use_cache:
            self.cache_k = k if self.cache_k is None else torch.cat([self.cache_k, k], dim=1)
            self.cache_v = v if self.cache_v is None else torch.cat([self.cache_v, v], dim=1)
            k, v = self.cache_k, self.cache_v
        k, q, v = k.transpose(1, 2), q.transpose(1, 2), v.transpose(1, 2)
        scores = q @ k.transpose(2, 3)
        mask_bool = self.mask.bool()[:num_tokens, :num_tokens]  # the bug
        scores = scores.masked_fill(mask_bool, -torch.inf)
        w = self.dropout(torch.softmax(scores / k.shape[-1] ** 0.5, dim=-1))
        ctx = (w @ v).transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)
        return self.out_proj(ctx)
