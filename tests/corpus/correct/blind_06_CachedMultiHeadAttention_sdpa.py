"""CachedMultiHeadAttention: F.scaled_dot_product_attention with a boolean "allowed" mask (k_pos <= q_pos, the inverse convention), dropout_p only in training, start position read from the cache length, reshape+permute for heads (written blind, from the contract alone)."""
import torch
import torch.nn.functional as F
from torch import nn


class CachedMultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads:
            raise ValueError(f"d_out={d_out} is not divisible by num_heads={num_heads}")
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.cache_k = None
        self.cache_v = None

    def reset_cache(self):
        self.cache_k = self.cache_v = None

    def _split(self, t):
        b, n, _ = t.shape
        return t.reshape(b, n, self.num_heads, self.head_dim).permute(0, 2, 1, 3)

    def forward(self, x, use_cache=False):
        b, n, _ = x.shape
        q = self._split(self.W_query(x))
        k = self._split(self.W_key(x))
        v = self._split(self.W_value(x))
        start = 0
        if use_cache:
            if self.cache_k is not None:
                start = self.cache_k.shape[2]  # position of the first new token
                k = torch.cat([self.cache_k, k], dim=2)
                v = torch.cat([self.cache_v, v], dim=2)
            self.cache_k, self.cache_v = k, v
        q_pos = torch.arange(start, start + n, device=x.device)
        k_pos = torch.arange(k.shape[2], device=x.device)
        allowed = k_pos[None, :] <= q_pos[:, None]  # SDPA: True = may attend
        out = F.scaled_dot_product_attention(
            q, k, v, attn_mask=allowed,
            dropout_p=self.dropout.p if self.training else 0.0,
        )  # [B, H, T, hd]
        out = out.permute(0, 2, 1, 3).reshape(b, n, -1)
        return self.out_proj(out)
