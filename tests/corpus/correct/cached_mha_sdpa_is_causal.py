"""CachedMultiHeadAttention: F.scaled_dot_product_attention, is_causal=True for a call without cached keys, an explicit attn_mask (True = allowed) after them; the cache as [B, H, T, hd]."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class CachedMultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads:
            raise ValueError("d_out must be divisible by num_heads")
        self.num_heads, self.head_dim, self.d_out = num_heads, d_out // num_heads, d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.cache_k = self.cache_v = None

    def forward(self, x, use_cache=False):
        b, t, _ = x.shape
        split = lambda y: y.view(b, t, self.num_heads, self.head_dim).transpose(1, 2)  # noqa: E731
        q, k, v = split(self.W_query(x)), split(self.W_key(x)), split(self.W_value(x))
        cached = 0
        if use_cache:
            if self.cache_k is not None:
                cached = self.cache_k.shape[2]
                k, v = torch.cat([self.cache_k, k], dim=2), torch.cat([self.cache_v, v], dim=2)
            self.cache_k, self.cache_v = k, v
        p = self.dropout.p if self.training else 0.0
        if cached == 0:
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=p)
        else:
            total = k.shape[2]
            allowed = torch.arange(total, device=x.device)[None, :] <= torch.arange(cached, total, device=x.device)[:, None]
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, dropout_p=p)
        return self.out_proj(out.transpose(1, 2).reshape(b, t, self.d_out))

    def reset_cache(self):
        self.cache_k = self.cache_v = None
