"""GroupedQueryAttention: Softmax over all keys first, then the future weights are zeroed with torch.where, without rescaling rows to sum to 1 (right only for token-by-token cached calls) (written blind, from the contract alone)."""
import torch
from torch import nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_in, d_out, dropout, num_heads, num_kv_groups, dtype=None, qkv_bias=False):
        super().__init__()
        if d_out % num_heads:
            raise ValueError(f"d_out ({d_out}) % num_heads ({num_heads}) != 0")
        if num_heads % num_kv_groups:
            raise ValueError(f"num_heads ({num_heads}) % num_kv_groups ({num_kv_groups}) != 0")
        self.num_heads, self.num_kv_groups = num_heads, num_kv_groups
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias, dtype=dtype)
        self.W_key = nn.Linear(d_in, num_kv_groups * self.head_dim, bias=qkv_bias, dtype=dtype)
        self.W_value = nn.Linear(d_in, num_kv_groups * self.head_dim, bias=qkv_bias, dtype=dtype)
        self.out_proj = nn.Linear(d_out, d_out, bias=False, dtype=dtype)
        self.dropout = nn.Dropout(dropout)
        self.cache_k = None
        self.cache_v = None

    def reset_cache(self):
        self.cache_k = None
        self.cache_v = None

    def forward(self, x, use_cache=False):
        B, T, _ = x.shape
        hd = self.head_dim
        per_group = self.num_heads // self.num_kv_groups
        q = self.W_query(x).view(B, T, self.num_heads, hd).transpose(1, 2)
        k = self.W_key(x).view(B, T, self.num_kv_groups, hd).transpose(1, 2)
        v = self.W_value(x).view(B, T, self.num_kv_groups, hd).transpose(1, 2)
        if use_cache:
            if self.cache_k is not None:
                k = torch.cat([self.cache_k, k], dim=2)
                v = torch.cat([self.cache_v, v], dim=2)
            self.cache_k, self.cache_v = k, v
        Tk = k.shape[2]
        start = Tk - T if use_cache else 0
        hidden = torch.ones(T, Tk, dtype=torch.bool, device=x.device).triu(start + 1)
        outs = []
        for g in range(self.num_kv_groups):
            qg = q[:, g * per_group:(g + 1) * per_group].double()  # [B, S, T, hd]
            kg = k[:, g:g + 1].double()  # [B, 1, Tk, hd], shared by the S heads
            vg = v[:, g:g + 1].double()
            s = torch.matmul(qg, kg.transpose(-2, -1)) / hd ** 0.5
            w = torch.softmax(s, dim=-1)
            w = torch.where(hidden, torch.zeros((), dtype=w.dtype, device=w.device), w)  # future weights removed
            w = self.dropout(w)
            outs.append(torch.matmul(w, vg).to(x.dtype))  # [B, S, T, hd]
        ctx = torch.cat(outs, dim=1).transpose(1, 2).reshape(B, T, -1)
        return self.out_proj(ctx)
