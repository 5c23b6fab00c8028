"""GroupedQueryAttention: llama's square [seqlen, seqlen] mask, triu(diagonal=start_pos + 1), added to [seqlen, start_pos + seqlen] scores, so a chunk after a cached prefix breaks (https://github.com/meta-llama/llama/issues/899)"""
import math

import torch
from torch import nn
from torch.nn import functional as F


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_in, d_out, dropout, num_heads, num_kv_groups, dtype=None, qkv_bias=False):
        super().__init__()
        if d_out % num_heads or num_heads % num_kv_groups:
            raise ValueError("bad sizes")
        self.n_heads, self.n_kv, self.n_rep = num_heads, num_kv_groups, num_heads // num_kv_groups
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias, dtype=dtype)
        self.W_key = nn.Linear(d_in, num_kv_groups * self.head_dim, bias=qkv_bias, dtype=dtype)
        self.W_value = nn.Linear(d_in, num_kv_groups * self.head_dim, bias=qkv_bias, dtype=dtype)
        self.out_proj = nn.Linear(d_out, d_out, bias=False, dtype=dtype)
        self.dropout = nn.Dropout(dropout)
        self.cache_k = self.cache_v = None

    def reset_cache(self):
        self.cache_k = self.cache_v = None

    def forward(self, x, use_cache=False):
        bsz, seqlen, _ = x.shape
        xq = self.W_query(x).view(bsz, seqlen, self.n_heads, self.head_dim)
        xk = self.W_key(x).view(bsz, seqlen, self.n_kv, self.head_dim)
        xv = self.W_value(x).view(bsz, seqlen, self.n_kv, self.head_dim)
        start_pos = 0
        if use_cache:
            start_pos = 0 if self.cache_k is None else self.cache_k.shape[1]
            self.cache_k = xk if self.cache_k is None else torch.cat([self.cache_k, xk], 1)
            self.cache_v = xv if self.cache_v is None else torch.cat([self.cache_v, xv], 1)
            xk, xv = self.cache_k, self.cache_v
        mask = None
        if seqlen > 1:
            mask = torch.full((1, 1, seqlen, seqlen), float("-inf"), device=x.device, dtype=x.dtype)
            mask = torch.triu(mask, diagonal=start_pos + 1)  # the bug: square, not [seqlen, start_pos + seqlen]
        keys = xk.repeat_interleave(self.n_rep, dim=2).transpose(1, 2)
        values = xv.repeat_interleave(self.n_rep, dim=2).transpose(1, 2)
        scores = xq.transpose(1, 2) @ keys.transpose(2, 3) / math.sqrt(self.head_dim)
        if mask is not None:
            scores = scores + mask
        w = self.dropout(F.softmax(scores, dim=-1))
        out = (w @ values).transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.out_proj(out)
