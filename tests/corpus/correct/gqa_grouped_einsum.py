"""GroupedQueryAttention: the query heads grouped with unflatten and attended with einsum, no copy of the keys
and values per head; the causal mask from torch.triu shifted by the cached positions."""
import torch
from torch import nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_in, d_out, dropout, num_heads, num_kv_groups, dtype=None, qkv_bias=False):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError("d_out must be divisible by num_heads")
        if num_heads % num_kv_groups != 0:
            raise ValueError("num_heads must be divisible by num_kv_groups")
        self.num_heads, self.num_kv_groups = num_heads, num_kv_groups
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias, dtype=dtype)
        self.W_key = nn.Linear(d_in, num_kv_groups * self.head_dim, bias=qkv_bias, dtype=dtype)
        self.W_value = nn.Linear(d_in, num_kv_groups * self.head_dim, bias=qkv_bias, dtype=dtype)
        self.out_proj = nn.Linear(d_out, d_out, bias=False, dtype=dtype)
        self.dropout = nn.Dropout(dropout)
        self.reset_cache()

    def reset_cache(self):
        self.cache_k = self.cache_v = None
        self.offset = 0

    def forward(self, x, use_cache=False):
        groups, per_group, hd = self.num_kv_groups, self.num_heads // self.num_kv_groups, self.head_dim
        q = self.W_query(x).unflatten(-1, (groups, per_group, hd))  # [B, T, G, R, hd]: head h = g*R + r
        k = self.W_key(x).unflatten(-1, (groups, hd)).transpose(1, 2)  # [B, G, T, hd]
        v = self.W_value(x).unflatten(-1, (groups, hd)).transpose(1, 2)
        start = 0
        if use_cache:
            start = self.offset
            if self.cache_k is not None:
                k, v = torch.cat((self.cache_k, k), dim=2), torch.cat((self.cache_v, v), dim=2)
            self.cache_k, self.cache_v = k, v
            self.offset += x.shape[1]

        scores = torch.einsum("btgrd,bgsd->bgrts", q, k) * hd ** -0.5  # [B, G, R, T, Tk]
        # query i sits at position start + i, key j at j: hide j > start + i
        future = torch.ones(x.shape[1], k.shape[2], dtype=torch.bool, device=x.device).triu(start + 1)
        weights = self.dropout(scores.masked_fill(future, float("-inf")).softmax(dim=-1))
        context = torch.einsum("bgrts,bgsd->btgrd", weights, v)  # [B, T, G, R, hd]
        return self.out_proj(context.flatten(2))
