"""CachedMultiHeadAttention: (deliberate) Cached the inputs instead of keys/values and recomputed all keys and values each call (cache-not-used)."""
import torch
from torch import nn


class CachedMultiHeadAttention(nn.Module):
    """04's causal ``MultiHeadAttention`` (same parameters) with a KV cache.

    ``forward(x [B, T, d_in], use_cache=False) -> [B, T, d_out]``. With ``use_cache``, the new tokens'
    keys and values are appended to ``cache_k`` and ``cache_v`` ([B, H, T_cached, hd]; None when empty)
    and their queries sit at the positions after the cached ones, so a sequence fed in one call,
    token by token or in chunks gives the same outputs. ``reset_cache()`` empties it.
    Lesson section 2, "A KV cache".
    """

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError("d_out must be divisible by num_heads")
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
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
        B, T, _ = x.shape
        queries = _heads(self.W_query(x), self.num_heads)
        keys = _heads(self.W_key(x), self.num_heads)
        values = _heads(self.W_value(x), self.num_heads)
        if use_cache:
            start = self.position
            self.history = x if start == 0 else torch.cat([self.history, x], dim=1)
            keys = _heads(self.W_key(self.history), self.num_heads)
            values = _heads(self.W_value(self.history), self.num_heads)
            self.cache_k, self.cache_v = keys, values
            self.position += T
        else:
            start = 0
        hidden = sliding_window_mask(T, keys.shape[2], None, q_start=start, device=x.device)
        context = _attend(queries, keys, values, hidden, self.dropout)
        return self.out_proj(context)
