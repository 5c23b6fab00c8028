import torch
from torch import nn


class GroupedQueryAttention(nn.Module):
    """MISTAKE: copies 04's out_proj with a bias: Linear(d_out, d_out) instead of bias=False."""

    def __init__(self, d_in, d_out, dropout, num_heads, num_kv_groups, dtype=None, qkv_bias=False):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError("d_out must be divisible by num_heads")
        if num_heads % num_kv_groups != 0:
            raise ValueError("num_heads must be divisible by num_kv_groups")
        self.num_heads = num_heads
        self.num_kv_groups = num_kv_groups
        self.group_size = num_heads // num_kv_groups
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias, dtype=dtype)
        self.W_key = nn.Linear(d_in, num_kv_groups * self.head_dim, bias=qkv_bias, dtype=dtype)
        self.W_value = nn.Linear(d_in, num_kv_groups * self.head_dim, bias=qkv_bias, dtype=dtype)
        self.out_proj = nn.Linear(d_out, d_out, dtype=dtype)
        self.dropout = nn.Dropout(dropout)
        self.reset_cache()

    def reset_cache(self):
        self.cache_k = None
        self.cache_v = None
        self.position = 0

    def forward(self, x, use_cache=False):
        B, T, _ = x.shape
        q = _heads(self.W_query(x), self.num_heads)
        k = _heads(self.W_key(x), self.num_kv_groups)
        v = _heads(self.W_value(x), self.num_kv_groups)
        start = 0
        if use_cache:
            start = self.position
            if self.cache_k is not None:
                k = torch.cat([self.cache_k, k], dim=2)
                v = torch.cat([self.cache_v, v], dim=2)
            self.cache_k, self.cache_v = k, v
            self.position += T
        k = repeat_kv(k, self.group_size)
        v = repeat_kv(v, self.group_size)
        hidden = sliding_window_mask(T, k.shape[2], None, q_start=start, device=x.device)
        return self.out_proj(_attend(q, k, v, hidden, self.dropout))
