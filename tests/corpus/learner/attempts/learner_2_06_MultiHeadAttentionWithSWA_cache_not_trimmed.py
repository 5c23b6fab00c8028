"""MultiHeadAttentionWithSWA: (deliberate) Never trimmed the cache to the window: it grows with every token."""
import torch
from torch import nn


class MultiHeadAttentionWithSWA(nn.Module):
    """Causal multi-head attention (04's parameters) where each query sees at most
    ``sliding_window_size`` keys, itself included (None: every earlier one).

    With ``use_cache``, a call of T tokens attends over at most ``sliding_window_size + T - 1`` keys
    (the cached ones still in some query's window, and its own), and afterwards the cache keeps the
    last ``sliding_window_size`` positions only: it never grows past the window.
    Lesson section 4, "Sliding windows".
    """

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
        B, T, _ = x.shape
        window = self.sliding_window_size
        queries = _heads(self.W_query(x), self.num_heads)
        keys = _heads(self.W_key(x), self.num_heads)
        values = _heads(self.W_value(x), self.num_heads)
        if use_cache:
            start = self.position
            if self.cache_k is not None:
                keys = torch.cat([self.cache_k, keys], dim=2)
                values = torch.cat([self.cache_v, values], dim=2)
            if window is not None:
                keep = min(keys.shape[2], window + T - 1)
                keys_att, values_att = keys[:, :, -keep:], values[:, :, -keep:]
                self.cache_k, self.cache_v = keys, values
            else:
                keep = keys.shape[2]
                keys_att, values_att = keys, values
                self.cache_k, self.cache_v = keys, values
            k_start = start + T - keep
            self.position += T
            hidden = sliding_window_mask(T, keep, window, q_start=start, k_start=k_start, device=x.device)
            context = _attend(queries, keys_att, values_att, hidden, self.dropout)
        else:
            hidden = sliding_window_mask(T, T, window, device=x.device)
            context = _attend(queries, keys, values, hidden, self.dropout)
        return self.out_proj(context)
