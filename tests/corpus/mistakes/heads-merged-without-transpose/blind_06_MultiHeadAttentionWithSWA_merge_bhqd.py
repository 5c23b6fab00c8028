"""MultiHeadAttentionWithSWA: The context einsum produces [B, H, T, hd] ("bhqd") and is then reshaped straight to [B, T, H*hd] (right only when T == 1 or H == 1) (written blind, from the contract alone)."""
import math

import torch
import torch.nn.functional as F
from torch import nn


class MultiHeadAttentionWithSWA(nn.Module):
    def __init__(self, d_in, d_out, dropout, num_heads, qkv_bias=False, sliding_window_size=None):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError(f"d_out={d_out} not divisible by num_heads={num_heads}")
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.sliding_window_size = sliding_window_size
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.reset_cache()

    def reset_cache(self):
        self.cache_k = self.cache_v = None
        self.next_pos = 0

    def forward(self, x, use_cache=False):
        B, T, _ = x.shape
        H, hd, W = self.num_heads, self.head_dim, self.sliding_window_size
        q = self.W_query(x).reshape(B, T, H, hd).transpose(1, 2)
        k = self.W_key(x).reshape(B, T, H, hd).transpose(1, 2)
        v = self.W_value(x).reshape(B, T, H, hd).transpose(1, 2)
        q0 = 0
        if use_cache:
            q0 = self.next_pos
            if self.cache_k is not None:
                k = torch.cat([self.cache_k, k], dim=2)
                v = torch.cat([self.cache_v, v], dim=2)
            if W is not None:
                k, v = k[:, :, -(W + T - 1):], v[:, :, -(W + T - 1):]
            self.cache_k = k if W is None else k[:, :, -W:].contiguous()
            self.cache_v = v if W is None else v[:, :, -W:].contiguous()
            self.next_pos += T
        Tk = k.shape[2]
        k0 = q0 + T - Tk
        dist = torch.arange(q0, q0 + T, device=x.device)[:, None] - torch.arange(k0, k0 + Tk, device=x.device)[None, :]
        hidden = dist < 0
        if W is not None:
            hidden = hidden | (dist >= W)
        scores = torch.einsum("bhqd,bhkd->bhqk", q.double(), k.double()) / math.sqrt(hd)
        scores = torch.where(hidden, float("-inf"), scores)
        weights = F.dropout(torch.softmax(scores, dim=-1), self.dropout.p, training=self.training)
        ctx = torch.einsum("bhqk,bhkd->bhqd", weights, v.double()).to(x.dtype)
        return self.out_proj(ctx.reshape(B, T, H * hd))
