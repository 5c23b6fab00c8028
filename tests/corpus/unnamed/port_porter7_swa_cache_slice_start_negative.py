"""MultiHeadAttentionWithSWA: the cache trimmed with k[:, :, k.shape[2] - keep:], whose start goes negative while the cache is short (round 7 porter's own slip; the hidden suite had no window above 3).

Incidental bug (NOT from an upstream project - the porter's own slip, found by the student-side
public suite): MultiHeadAttentionWithSWA trims the cache with k[:, :, k.shape[2] - keep:] where
keep = window - 1; while fewer than `keep` positions exist, the start index is NEGATIVE and the slice
keeps too few positions (e.g. 2 positions, keep 3 -> k[:, :, -1:] keeps 1). Token-by-token decoding
with window >= 4 then drops keys that are still inside the window. Everything else is correct.
"""

import torch

from torch import nn

def _attend(queries, keys, values, hidden, dropout):
    """Scaled dot-product attention of [B, H, Tq, hd] queries over [B, H, Tk, hd] keys and values,
    ``hidden`` [Tq, Tk] removed; the heads merged back: -> [B, Tq, H*hd]."""
    scores = queries @ keys.transpose(2, 3) / keys.shape[-1] ** 0.5  # [B, H, Tq, Tk]
    weights = dropout(torch.softmax(scores.masked_fill(hidden, float("-inf")), dim=-1))  # [B, H, Tq, Tk]
    context = (weights @ values).transpose(1, 2)  # [B, Tq, H, hd]
    return context.reshape(context.shape[0], context.shape[1], -1)  # [B, Tq, H*hd]

def _heads(x, num_heads):
    """[B, T, num_heads*hd] -> [B, num_heads, T, hd]."""
    batch, num_tokens, dim = x.shape
    return x.view(batch, num_tokens, num_heads, dim // num_heads).transpose(1, 2)

class MultiHeadAttentionWithSWA(nn.Module):
    def __init__(self, d_in, d_out, dropout, num_heads, qkv_bias=False, sliding_window_size=None):
        super().__init__()
        if d_out % num_heads:
            raise ValueError("d_out must be divisible by num_heads")
        self.d_out, self.num_heads, self.head_dim = d_out, num_heads, d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.sliding_window_size = sliding_window_size
        self.reset_cache()

    def reset_cache(self):
        self.cache_k, self.cache_v, self.position = None, None, 0

    def forward(self, x, use_cache=False):
        T = x.shape[1]
        W = self.sliding_window_size
        q = _heads(self.W_query(x), self.num_heads)
        k = _heads(self.W_key(x), self.num_heads)
        v = _heads(self.W_value(x), self.num_heads)
        if not use_cache:
            return self.out_proj(_attend(q, k, v, sliding_window_mask(T, T, W, device=x.device), self.dropout))
        start = self.position
        if self.cache_k is not None:
            k = torch.cat([self.cache_k, k], dim=2)
            v = torch.cat([self.cache_v, v], dim=2)
        k_start = start + T - k.shape[2]
        hidden = sliding_window_mask(T, k.shape[2], W, q_start=start, k_start=k_start, device=x.device)
        out = self.out_proj(_attend(q, k, v, hidden, self.dropout))
        keep = k.shape[2] if W is None else max(W - 1, 0)
        self.cache_k = k[:, :, k.shape[2] - keep:, :]
        self.cache_v = v[:, :, v.shape[2] - keep:, :]
        self.position += T
        return out
