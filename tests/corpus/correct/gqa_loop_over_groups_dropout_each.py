"""GroupedQueryAttention: loops over the key/value groups, attending with each group's query heads and drawing dropout once per group (another draw order than one call)."""
import torch
import torch.nn as nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_in, d_out, dropout, num_heads, num_kv_groups, dtype=None, qkv_bias=False):
        super().__init__()
        if d_out % num_heads:
            raise ValueError("d_out must be divisible by num_heads")
        if num_heads % num_kv_groups:
            raise ValueError("num_heads must be divisible by num_kv_groups")
        self.num_heads, self.num_kv_groups = num_heads, num_kv_groups
        self.head_dim = d_out // num_heads
        self.group_size = num_heads // num_kv_groups
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias, dtype=dtype)
        self.W_key = nn.Linear(d_in, num_kv_groups * self.head_dim, bias=qkv_bias, dtype=dtype)
        self.W_value = nn.Linear(d_in, num_kv_groups * self.head_dim, bias=qkv_bias, dtype=dtype)
        self.out_proj = nn.Linear(d_out, d_out, bias=False, dtype=dtype)
        self.dropout = nn.Dropout(dropout)
        self.cache_k = self.cache_v = None

    def forward(self, x, use_cache=False):
        b, t, _ = x.shape
        q = self.W_query(x).view(b, t, self.num_heads, self.head_dim).transpose(1, 2)  # [B, H, T, hd]
        k = self.W_key(x).view(b, t, self.num_kv_groups, self.head_dim).transpose(1, 2)  # [B, G, T, hd]
        v = self.W_value(x).view(b, t, self.num_kv_groups, self.head_dim).transpose(1, 2)
        if use_cache:
            if self.cache_k is not None:
                k, v = torch.cat([self.cache_k, k], dim=2), torch.cat([self.cache_v, v], dim=2)
            self.cache_k, self.cache_v = k, v
        total = k.shape[2]
        hidden = torch.arange(total, device=x.device)[None, :] > torch.arange(total - t, total, device=x.device)[:, None]
        outputs = []
        for g in range(self.num_kv_groups):
            heads = q[:, g * self.group_size:(g + 1) * self.group_size]  # [B, group, T, hd]
            scores = heads @ k[:, g:g + 1].transpose(2, 3) / self.head_dim ** 0.5
            weights = self.dropout(torch.softmax(scores.masked_fill(hidden, float("-inf")), dim=-1))
            outputs.append(weights @ v[:, g:g + 1])
        context = torch.cat(outputs, dim=1)  # [B, H, T, hd]
        return self.out_proj(context.transpose(1, 2).reshape(b, t, -1))

    def reset_cache(self):
        self.cache_k = self.cache_v = None
