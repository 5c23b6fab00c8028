"""GroupedQueryAttention: port of meta-llama/llama3 llama/model.py Attention with n_kv_heads < n_heads (cache of n_kv_heads, repeat_kv by expand/reshape on [bs, slen, n_kv_heads, hd], Transformer.forward's start_pos mask)"""
import math

import torch
from torch import nn
from torch.nn import functional as F


def _llama_repeat_kv(x, n_rep):
    bs, slen, n_kv_heads, head_dim = x.shape
    if n_rep == 1:
        return x
    return (x[:, :, :, None, :].expand(bs, slen, n_kv_heads, n_rep, head_dim)
            .reshape(bs, slen, n_kv_heads * n_rep, head_dim))


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_in, d_out, dropout, num_heads, num_kv_groups, dtype=None, qkv_bias=False):
        super().__init__()
        if d_out % num_heads != 0 or num_heads % num_kv_groups != 0:
            raise ValueError("d_out must be divisible by num_heads, num_heads by num_kv_groups")
        self.n_local_heads = num_heads
        self.n_local_kv_heads = num_kv_groups
        self.n_rep = num_heads // num_kv_groups
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias, dtype=dtype)
        self.W_key = nn.Linear(d_in, num_kv_groups * self.head_dim, bias=qkv_bias, dtype=dtype)
        self.W_value = nn.Linear(d_in, num_kv_groups * self.head_dim, bias=qkv_bias, dtype=dtype)
        self.out_proj = nn.Linear(d_out, d_out, bias=False, dtype=dtype)
        self.dropout = nn.Dropout(dropout)
        self.cache_k = None
        self.cache_v = None

    def reset_cache(self):
        self.cache_k, self.cache_v = None, None

    def forward(self, x, use_cache=False):
        bsz, seqlen, _ = x.shape
        xq, xk, xv = self.W_query(x), self.W_key(x), self.W_value(x)
        xq = xq.view(bsz, seqlen, self.n_local_heads, self.head_dim)
        xk = xk.view(bsz, seqlen, self.n_local_kv_heads, self.head_dim)
        xv = xv.view(bsz, seqlen, self.n_local_kv_heads, self.head_dim)
        if use_cache:
            start_pos = 0 if self.cache_k is None else self.cache_k.shape[1]
            self.cache_k = xk if self.cache_k is None else torch.cat([self.cache_k, xk], dim=1)
            self.cache_v = xv if self.cache_v is None else torch.cat([self.cache_v, xv], dim=1)
            keys, values = self.cache_k, self.cache_v
        else:
            start_pos = 0
            keys, values = xk, xv
        mask = None
        if seqlen > 1:
            mask = torch.full((seqlen, seqlen), float("-inf"), device=x.device, dtype=x.dtype)
            mask = torch.triu(mask, diagonal=1)
            mask = torch.hstack([torch.zeros((seqlen, start_pos), device=x.device, dtype=x.dtype), mask])
        keys = _llama_repeat_kv(keys, self.n_rep)
        values = _llama_repeat_kv(values, self.n_rep)
        xq = xq.transpose(1, 2)
        keys = keys.transpose(1, 2)
        values = values.transpose(1, 2)
        scores = torch.matmul(xq, keys.transpose(2, 3)) / math.sqrt(self.head_dim)
        if mask is not None:
            scores = scores + mask
        scores = F.softmax(scores.to(torch.promote_types(scores.dtype, torch.float32)), dim=-1).type_as(xq)
        scores = self.dropout(scores)
        output = torch.matmul(scores, values)
        output = output.transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.out_proj(output)
