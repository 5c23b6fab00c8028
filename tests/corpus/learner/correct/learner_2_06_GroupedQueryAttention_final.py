"""GroupedQueryAttention: Final correct version (own helpers repeat_kv, sliding_window_mask and provided _attend/_heads included)."""
import torch
from torch import nn


def repeat_kv(x, group_size):
    """Repeat each key/value group ``group_size`` times in a row, one copy per query head it serves:
    [K1, K2] becomes [K1, K1, K2, K2] (query head h uses group h // group_size).

    x: [B, G, T, hd]  ->  [B, G*group_size, T, hd]. Lesson section 3, "Grouped-query attention".
    """
    return x.repeat_interleave(group_size, dim=1)


def sliding_window_mask(num_queries, num_keys, window, q_start=0, k_start=0, device=None):
    """True (hidden) where key position k_start+j is after query position q_start+i, or ``window`` or
    more tokens before it: each query sees itself and the window-1 tokens before it (window None:
    every earlier token).

    -> bool [num_queries, num_keys]. Lesson section 2, "A KV cache" (the window: section 4).
    """
    q = torch.arange(q_start, q_start + num_queries, device=device)[:, None]
    k = torch.arange(k_start, k_start + num_keys, device=device)[None, :]
    hidden = k > q
    if window is not None:
        hidden = hidden | (k <= q - window)
    return hidden


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


class GroupedQueryAttention(nn.Module):
    """Causal grouped-query attention: ``num_heads`` query heads share ``num_kv_groups`` key/value
    heads, query head h using group h // (num_heads/num_kv_groups); the cache holds the groups only.

    ``W_query: Linear(d_in, d_out)``, ``W_key``, ``W_value: Linear(d_in, num_kv_groups*head_dim)``
    (all ``bias=qkv_bias``), ``out_proj: Linear(d_out, d_out, bias=False)``. Raise ValueError if d_out
    is not divisible by num_heads, or num_heads by num_kv_groups. ``forward`` and the cache as in
    ``CachedMultiHeadAttention``, with ``cache_k``, ``cache_v``: [B, G, T_cached, hd].
    Lesson section 3, "Grouped-query attention".
    """

    def __init__(self, d_in, d_out, dropout, num_heads, num_kv_groups, dtype=None, qkv_bias=False):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError("d_out must be divisible by num_heads")
        if num_heads % num_kv_groups != 0:
            raise ValueError("num_heads must be divisible by num_kv_groups")
        self.d_out = d_out
        self.num_heads = num_heads
        self.num_kv_groups = num_kv_groups
        self.group_size = num_heads // num_kv_groups
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias, dtype=dtype)
        self.W_key = nn.Linear(d_in, num_kv_groups * self.head_dim, bias=qkv_bias, dtype=dtype)
        self.W_value = nn.Linear(d_in, num_kv_groups * self.head_dim, bias=qkv_bias, dtype=dtype)
        self.out_proj = nn.Linear(d_out, d_out, bias=False, dtype=dtype)
        self.dropout = nn.Dropout(dropout)
        self.reset_cache()

    def reset_cache(self):
        self.cache_k = None
        self.cache_v = None
        self.position = 0

    def forward(self, x, use_cache=False):
        B, T, _ = x.shape
        queries = _heads(self.W_query(x), self.num_heads)
        keys = _heads(self.W_key(x), self.num_kv_groups)
        values = _heads(self.W_value(x), self.num_kv_groups)
        if use_cache:
            start = self.position
            if self.cache_k is None:
                self.cache_k, self.cache_v = keys, values
            else:
                self.cache_k = torch.cat([self.cache_k, keys], dim=2)
                self.cache_v = torch.cat([self.cache_v, values], dim=2)
            keys, values = self.cache_k, self.cache_v
            self.position += T
        else:
            start = 0
        keys = repeat_kv(keys, self.group_size)
        values = repeat_kv(values, self.group_size)
        hidden = sliding_window_mask(T, keys.shape[2], None, q_start=start, device=x.device)
        context = _attend(queries, keys, values, hidden, self.dropout)
        return self.out_proj(context)
