"""GroupedQueryAttention: Python loop over the G groups (not tokens): each group's S query heads broadcast against its single key/value head; start derived as Tk - T; ones().triu(start+1) mask via torch.where; float64 inside, cast back per group (written blind, from the contract alone)."""
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
            s = torch.where(hidden, torch.tensor(float("-inf"), dtype=s.dtype, device=s.device), s)
            w = self.dropout(torch.softmax(s, dim=-1))
            outs.append(torch.matmul(w, vg).to(x.dtype))  # [B, S, T, hd]
        ctx = torch.cat(outs, dim=1).transpose(1, 2).reshape(B, T, -1)
        return self.out_proj(ctx)
