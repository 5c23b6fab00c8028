"""MultiHeadAttentionWithSWA: reset_cache assigns local variables (no self.), so the cache is never emptied."""
import torch
from torch import nn


class MultiHeadAttentionWithSWA(nn.Module):
    def __init__(self, d_in, d_out, dropout, num_heads, qkv_bias=False, sliding_window_size=None):
        super().__init__()
        if d_out % num_heads:
            raise ValueError(f"d_out={d_out} is not divisible by num_heads={num_heads}")
        self.num_heads, self.head_dim = num_heads, d_out // num_heads
        self.sliding_window_size = sliding_window_size
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.cache_k, self.cache_v, self.position = None, None, 0

    def reset_cache(self):
        cache_k, cache_v = None, None
        self.position = 0

    def forward(self, x, use_cache=False):
        b, num_tokens, _ = x.shape
        window = self.sliding_window_size
        queries = self.W_query(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        keys = self.W_key(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        values = self.W_value(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        q_start = 0
        if use_cache:
            q_start = self.position
            if self.cache_k is not None:
                keys = torch.cat([self.cache_k, keys], dim=2)
                values = torch.cat([self.cache_v, values], dim=2)
            if window is None:
                self.cache_k, self.cache_v = keys, values
            else:
                self.cache_k, self.cache_v = keys[:, :, -window:], values[:, :, -window:]
                keys, values = keys[:, :, -(window + num_tokens - 1):], values[:, :, -(window + num_tokens - 1):]
            self.position += num_tokens
        k_start = q_start + num_tokens - keys.shape[2]
        mask = sliding_window_mask(num_tokens, keys.shape[2], window, q_start=q_start, k_start=k_start,
                                   device=x.device)
        scores = queries @ keys.transpose(2, 3) / self.head_dim ** 0.5
        weights = self.dropout(torch.softmax(scores.masked_fill(mask, -torch.inf), dim=-1))
        return self.out_proj((weights @ values).transpose(1, 2).reshape(b, num_tokens, -1))
