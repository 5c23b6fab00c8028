"""CachedMultiHeadAttention: Cache kept un-split as [B,T,d_out] on dim 1; heads via unflatten; einsum scores computed in float64 with an additive torch.where -inf bias, F.dropout(training=self.training), cast back to x.dtype before out_proj (written blind, from the contract alone)."""
import math

import torch
import torch.nn.functional as F
from torch import nn


class CachedMultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError("d_out must be a multiple of num_heads")
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.reset_cache()

    def reset_cache(self):
        # cache kept un-split, [B, T_cached, d_out]
        self.cache_k = None
        self.cache_v = None
        self.n_cached = 0

    def forward(self, x, use_cache=False):
        k_new = self.W_key(x)
        v_new = self.W_value(x)
        q = self.W_query(x)
        n = x.shape[1]
        if use_cache:
            start = self.n_cached
            if self.cache_k is None:
                self.cache_k, self.cache_v = k_new, v_new
            else:
                self.cache_k = torch.cat([self.cache_k, k_new], dim=1)
                self.cache_v = torch.cat([self.cache_v, v_new], dim=1)
            self.n_cached += n
            k, v = self.cache_k, self.cache_v
        else:
            start = 0
            k, v = k_new, v_new
        H = self.num_heads
        qh = q.unflatten(-1, (H, self.head_dim)).double()  # [B, Tq, H, hd]
        kh = k.unflatten(-1, (H, self.head_dim)).double()  # [B, Tk, H, hd]
        vh = v.unflatten(-1, (H, self.head_dim)).double()
        scores = torch.einsum("bqhd,bkhd->bhqk", qh, kh) / math.sqrt(self.head_dim)
        q_pos = torch.arange(start, start + n, device=x.device).unsqueeze(1)
        k_pos = torch.arange(k.shape[1], device=x.device).unsqueeze(0)
        bias = torch.where(k_pos > q_pos, float("-inf"), 0.0).to(scores.dtype)
        weights = torch.softmax(scores + bias, dim=-1)
        weights = F.dropout(weights, p=self.dropout.p, training=self.training)
        ctx = torch.einsum("bhqk,bkhd->bqhd", weights, vh).flatten(2).to(x.dtype)
        return self.out_proj(ctx)
