"""MultiHeadAttentionWithSWA: Cached calls keep only the last `window` keys (instead of window+T-1) before attending, so the earlier queries of a multi-token cached chunk lose keys they need (NaN rows where none are left); token-by-token decoding and plain calls are right (written blind, from the contract alone)."""
import torch
from torch import nn


class MultiHeadAttentionWithSWA(nn.Module):
    def __init__(self, d_in, d_out, dropout, num_heads, qkv_bias=False, sliding_window_size=None):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError("d_out must be divisible by num_heads")
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.sliding_window_size = sliding_window_size
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.reset_cache()

    def reset_cache(self):
        self.cache_k = None
        self.cache_v = None
        self.position = 0

    def forward(self, x, use_cache=False):
        window = self.sliding_window_size
        num_tokens = x.shape[1]
        queries = _heads(self.W_query(x), self.num_heads)
        keys = _heads(self.W_key(x), self.num_heads)
        values = _heads(self.W_value(x), self.num_heads)
        if not use_cache:
            hidden = sliding_window_mask(num_tokens, num_tokens, window, device=x.device)
            return self.out_proj(_attend(queries, keys, values, hidden, self.dropout))
        start = self.position
        if self.cache_k is not None:
            keys = torch.cat((self.cache_k, keys), dim=2)
            values = torch.cat((self.cache_v, values), dim=2)
        if window is not None:  # the keys this call can still need
            keep = window
            keys, values = keys[:, :, -keep:], values[:, :, -keep:]
        k_start = start + num_tokens - keys.shape[2]
        hidden = sliding_window_mask(num_tokens, keys.shape[2], window, q_start=start, k_start=k_start,
                                     device=x.device)
        out = self.out_proj(_attend(queries, keys, values, hidden, self.dropout))
        if window is not None:
            self.cache_k, self.cache_v = keys[:, :, -window:], values[:, :, -window:]
        else:
            self.cache_k, self.cache_v = keys, values
        self.position += num_tokens
        return out
