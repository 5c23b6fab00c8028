"""MultiHeadAttentionWithSWA: Per-head SWA that multiplies the attention weights by the keys instead of the values (W_value unused) (written blind, from the contract alone)."""
import torch
from torch import nn


class MultiHeadAttentionWithSWA(nn.Module):
    def __init__(self, d_in, d_out, dropout, num_heads, qkv_bias=False, sliding_window_size=None):
        super().__init__()
        if d_out % num_heads:
            raise ValueError("d_out must be divisible by num_heads")
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.sliding_window_size = sliding_window_size
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.cache_k = None  # [B, T_cached, d_out], heads not split
        self.cache_v = None
        self.num_seen = 0

    def reset_cache(self):
        self.cache_k = None
        self.cache_v = None
        self.num_seen = 0

    def forward(self, x, use_cache=False):
        B, T, _ = x.shape
        window = self.sliding_window_size
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)  # [B, T, d_out]
        first = 0
        if use_cache:
            first = self.num_seen
            if self.cache_k is not None:
                k = torch.cat([self.cache_k, k], dim=1)
                v = torch.cat([self.cache_v, v], dim=1)
            if window is not None:
                needed = min(k.shape[1], window + T - 1)
                k, v = k[:, k.shape[1] - needed:], v[:, v.shape[1] - needed:]
                kept = min(k.shape[1], window)
                self.cache_k, self.cache_v = k[:, k.shape[1] - kept:], v[:, v.shape[1] - kept:]
            else:
                self.cache_k, self.cache_v = k, v
            self.num_seen += T
        Tk = k.shape[1]
        off = first - (first + T - Tk)  # query position minus key position for row 0, column 0
        ones = torch.ones(T, Tk, dtype=torch.bool, device=x.device)
        hidden = ones.triu(off + 1)  # key after the query
        if window is not None:
            hidden = hidden | ones.tril(off - window)  # key window or more before the query
        hd = self.head_dim
        outs = []
        for h in range(self.num_heads):
            qh, kh, vh = (t[..., h * hd:(h + 1) * hd] for t in (q, k, v))
            s = qh @ kh.transpose(1, 2) / hd ** 0.5  # [B, T, Tk]
            w = torch.softmax(s.masked_fill(hidden, float("-inf")), dim=-1)
            outs.append(self.dropout(w) @ kh)
        return self.out_proj(torch.cat(outs, dim=-1))
