"""CachedMultiHeadAttention: reset_cache empties the kv cache but leaves ptr_current_pos, so the next sequence's mask rows start at the old position (https://github.com/rasbt/LLMs-from-scratch/pull/925)"""
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
        self.ptr_current_pos = 0

    def reset_cache(self):
        self.cache_k = self.cache_v = None  # the bug: ptr_current_pos stays where it was

    def forward(self, x, use_cache=False):
        b, T, _ = x.shape
        k = self.W_key(x).view(b, T, self.num_heads, self.head_dim)
        v = self.W_value(x).view(b, T, self.num_heads, self.head_dim)
        q = self.W_query(x).view(b, T, self.num_heads, self.head_dim)
        if use_cache:
            self.cache_k = k if self.cache_k is None else torch.cat([self.cache_k, k], dim=1)
            self.cache_v = v if self.cache_v is None else torch.cat([self.cache_v, v], dim=1)
            k, v = self.cache_k, self.cache_v
        k, q, v = k.transpose(1, 2), q.transpose(1, 2), v.transpose(1, 2)
        scores = q @ k.transpose(2, 3)
        Tk = k.shape[-2]
        if use_cache:
            mask_bool = self.mask.bool()[self.ptr_current_pos:self.ptr_current_pos + T, :Tk]
            self.ptr_current_pos += T
        else:
            mask_bool = self.mask.bool()[:T, :Tk]
        scores = scores.masked_fill(mask_bool, -torch.inf)
        w = self.dropout(torch.softmax(scores / k.shape[-1] ** 0.5, dim=-1))
        ctx = (w @ v).transpose(1, 2).contiguous().view(b, T, self.d_out)
        return self.out_proj(ctx)
