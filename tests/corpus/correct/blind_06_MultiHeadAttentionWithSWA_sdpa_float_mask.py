"""MultiHeadAttentionWithSWA: SDPA with an additive float mask (0 / -inf) in the query dtype, cache kept as [B,T,H,hd] on dim 1, narrow() to the last window+T-1 keys before attending, cache trimmed to the last window positions after (written blind, from the contract alone)."""
import torch
import torch.nn.functional as F
from torch import nn


class MultiHeadAttentionWithSWA(nn.Module):
    def __init__(self, d_in, d_out, dropout, num_heads, qkv_bias=False, sliding_window_size=None):
        super().__init__()
        if d_out % num_heads:
            raise ValueError("d_out must be divisible by num_heads")
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.window = sliding_window_size
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.cache_k = None  # [B, T_cached, H, hd]
        self.cache_v = None
        self.ptr = 0

    def reset_cache(self):
        self.cache_k, self.cache_v = None, None
        self.ptr = 0

    def forward(self, x, use_cache=False):
        b, n, _ = x.shape
        q = self.W_query(x).view(b, n, self.num_heads, self.head_dim)
        k = self.W_key(x).view(b, n, self.num_heads, self.head_dim)
        v = self.W_value(x).view(b, n, self.num_heads, self.head_dim)
        q_start = 0
        if use_cache:
            q_start = self.ptr
            if self.cache_k is not None:
                k = torch.cat([self.cache_k, k], dim=1)
                v = torch.cat([self.cache_v, v], dim=1)
            if self.window is not None and k.shape[1] > self.window + n - 1:
                drop = k.shape[1] - (self.window + n - 1)
                k = k.narrow(1, drop, k.shape[1] - drop)
                v = v.narrow(1, drop, v.shape[1] - drop)
        k_start = q_start + n - k.shape[1]
        q_pos = torch.arange(q_start, q_start + n, device=x.device).view(-1, 1)
        k_pos = torch.arange(k_start, k_start + k.shape[1], device=x.device).view(1, -1)
        visible = k_pos <= q_pos
        if self.window is not None:
            visible &= (q_pos - k_pos) < self.window
        bias = torch.zeros(visible.shape, dtype=q.dtype, device=x.device).masked_fill(~visible, float("-inf"))
        out = F.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), attn_mask=bias,
            dropout_p=self.dropout.p if self.training else 0.0,
        )
        if use_cache:
            keep = k.shape[1] if self.window is None else min(self.window, k.shape[1])
            self.cache_k = k[:, k.shape[1] - keep:]
            self.cache_v = v[:, v.shape[1] - keep:]
            self.ptr += n
        return self.out_proj(out.transpose(1, 2).reshape(b, n, -1))
