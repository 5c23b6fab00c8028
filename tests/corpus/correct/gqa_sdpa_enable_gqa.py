"""GroupedQueryAttention: SDPA with enable_gqa, attn_mask (True = allowed), dropout_p in training."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_in, d_out, dropout, num_heads, num_kv_groups, dtype=None, qkv_bias=False):
        super().__init__()
        if d_out % num_heads or num_heads % num_kv_groups:
            raise ValueError("indivisible")
        self.num_heads, self.num_kv_groups, self.head_dim = num_heads, num_kv_groups, d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias, dtype=dtype)
        self.W_key = nn.Linear(d_in, num_kv_groups * self.head_dim, bias=qkv_bias, dtype=dtype)
        self.W_value = nn.Linear(d_in, num_kv_groups * self.head_dim, bias=qkv_bias, dtype=dtype)
        self.out_proj = nn.Linear(d_out, d_out, bias=False, dtype=dtype)
        self.dropout = nn.Dropout(dropout)
        self.cache_k = self.cache_v = None

    def forward(self, x, use_cache=False):
        b, t, _ = x.shape
        q = self.W_query(x).view(b, t, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.W_key(x).view(b, t, self.num_kv_groups, self.head_dim).transpose(1, 2)
        v = self.W_value(x).view(b, t, self.num_kv_groups, self.head_dim).transpose(1, 2)
        if use_cache:
            if self.cache_k is not None:
                k = torch.cat([self.cache_k, k], dim=2)
                v = torch.cat([self.cache_v, v], dim=2)
            self.cache_k, self.cache_v = k, v
        else:
            self.cache_k = self.cache_v = None
        tk = k.shape[2]
        start = tk - t
        allowed = torch.arange(tk, device=x.device)[None, :] <= (start + torch.arange(t, device=x.device))[:, None]
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, enable_gqa=True,
                                             dropout_p=self.dropout.p if self.training else 0.0)
        return self.out_proj(out.transpose(1, 2).reshape(b, t, -1))

    def reset_cache(self):
        self.cache_k = self.cache_v = None
