"""GroupedQueryAttention: F.scaled_dot_product_attention(enable_gqa=True) on un-repeated [B,G,T,hd] keys/values with a boolean "allowed" mask, dropout_p only in training, unflatten/flatten for heads, explicit offset counter (written blind, from the contract alone)."""
import torch
import torch.nn.functional as F
from torch import nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_in, d_out, dropout, num_heads, num_kv_groups, dtype=None, qkv_bias=False):
        super().__init__()
        if d_out % num_heads or num_heads % num_kv_groups:
            raise ValueError("need d_out % num_heads == 0 and num_heads % num_kv_groups == 0")
        self.num_heads = num_heads
        self.num_kv_groups = num_kv_groups
        self.head_dim = d_out // num_heads
        kv_dim = num_kv_groups * self.head_dim
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias, dtype=dtype)
        self.W_key = nn.Linear(d_in, kv_dim, bias=qkv_bias, dtype=dtype)
        self.W_value = nn.Linear(d_in, kv_dim, bias=qkv_bias, dtype=dtype)
        self.out_proj = nn.Linear(d_out, d_out, bias=False, dtype=dtype)
        self.dropout = nn.Dropout(dropout)
        self.cache_k = self.cache_v = None
        self.offset = 0

    def reset_cache(self):
        self.cache_k = self.cache_v = None
        self.offset = 0

    def forward(self, x, use_cache=False):
        B, T, _ = x.shape
        q = self.W_query(x).unflatten(-1, (self.num_heads, self.head_dim)).transpose(1, 2)
        k = self.W_key(x).unflatten(-1, (self.num_kv_groups, self.head_dim)).transpose(1, 2)
        v = self.W_value(x).unflatten(-1, (self.num_kv_groups, self.head_dim)).transpose(1, 2)
        if use_cache:
            if self.cache_k is not None:
                k = torch.cat([self.cache_k, k], dim=2)
                v = torch.cat([self.cache_v, v], dim=2)
            self.cache_k, self.cache_v = k, v
            q_start = self.offset
            self.offset += T
        else:
            q_start = 0
        q_pos = torch.arange(q_start, q_start + T, device=x.device)[:, None]
        k_pos = torch.arange(k.shape[2], device=x.device)[None, :]
        out = F.scaled_dot_product_attention(
            q, k, v,
            attn_mask=k_pos <= q_pos,  # True = may attend (SDPA convention)
            dropout_p=self.dropout.p if self.training else 0.0,
            enable_gqa=True,
        )
        return self.out_proj(out.transpose(1, 2).flatten(2))
