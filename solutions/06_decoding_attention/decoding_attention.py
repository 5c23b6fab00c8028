"""Assignment 06: decoding attention, the attention of fast generation.

Lesson: the notebook ``decoding_attention.ipynb`` beside this file. A decoder generates one token at
a time; each new token attends to every earlier one. Three ideas make that cheap: a KV cache (keys
and values of earlier tokens computed once and kept), grouped-query attention (several query heads
share one key/value head, so the cache is smaller) and sliding-window attention (each token sees only
the last few, so the cache stops growing). Rotary positions (RoPE) tell attention where tokens are by
rotating queries and keys, which works at any position a cached call starts from.

Shapes: B batch, T tokens, H query heads, G key/value groups, hd = d_out / H features per head.
Masks are boolean and True means hidden.
"""
import torch
from torch import nn


def compute_rope_params(head_dim, theta_base=10_000, context_length=4096, dtype=torch.float32):
    """The rotary angles' cosines and sines: angle(pos, i) = pos * theta_base^(-2i/head_dim) for
    i < head_dim/2, repeated over both halves of the head.

    -> (cos, sin), each [context_length, head_dim], float32. Raise ValueError for an odd head_dim.
    Lesson section 1, "Rotary positions".
    """
    ### BEGIN SOLUTION
    if head_dim % 2:
        raise ValueError(f"head_dim={head_dim} must be even: RoPE rotates pairs of features")
    exponents = torch.arange(0, head_dim, 2, dtype=dtype) / head_dim  # [hd/2]: 2i / hd
    inv_freq = 1.0 / theta_base**exponents  # [hd/2]
    positions = torch.arange(context_length, dtype=dtype)  # [L]
    angles = positions[:, None] * inv_freq[None, :]  # [L, hd/2]
    angles = torch.cat([angles, angles], dim=-1)  # [L, hd]: the same angle for feature i and i + hd/2
    return torch.cos(angles), torch.sin(angles)
    ### END SOLUTION


def apply_rope(x, cos, sin, offset=0):
    """Rotate each head's two halves by the angles of positions offset ... offset+T-1:
    x*cos + cat(-x2, x1)*sin, where x1, x2 are the first and second half of the features.

    x: [B, H, T, hd], cos and sin: [L, hd]  ->  [B, H, T, hd], in x's dtype.
    Lesson section 1, "Rotary positions".
    """
    ### BEGIN SOLUTION
    num_tokens, half = x.shape[-2], x.shape[-1] // 2
    cos = cos[offset:offset + num_tokens].to(x.device)  # [T, hd]
    sin = sin[offset:offset + num_tokens].to(x.device)  # [T, hd]
    x1, x2 = x[..., :half], x[..., half:]  # [B, H, T, hd/2] each
    rotated = torch.cat([-x2, x1], dim=-1)  # [B, H, T, hd]
    return (x * cos + rotated * sin).to(x.dtype)  # [B, H, T, hd]
    ### END SOLUTION


def repeat_kv(x, group_size):
    """Repeat each key/value group ``group_size`` times in a row, one copy per query head it serves:
    [K1, K2] becomes [K1, K1, K2, K2] (query head h uses group h // group_size).

    x: [B, G, T, hd]  ->  [B, G*group_size, T, hd]. Lesson section 3, "Grouped-query attention".
    """
    ### BEGIN SOLUTION
    return x.repeat_interleave(group_size, dim=1)  # [B, G*group_size, T, hd]
    ### END SOLUTION


def sliding_window_mask(num_queries, num_keys, window, q_start=0, k_start=0, device=None):
    """True (hidden) where key position k_start+j is after query position q_start+i, or ``window`` or
    more tokens before it: each query sees itself and the window-1 tokens before it (window None:
    every earlier token).

    -> bool [num_queries, num_keys]. Lesson section 2, "A KV cache" (the window: section 4).
    """
    ### BEGIN SOLUTION
    queries = torch.arange(q_start, q_start + num_queries, device=device)[:, None]  # [Tq, 1]
    keys = torch.arange(k_start, k_start + num_keys, device=device)[None, :]  # [1, Tk]
    hidden = keys > queries  # [Tq, Tk]: the future
    if window is not None:
        hidden = hidden | (queries - keys >= window)  # and what is out of the window
    return hidden
    ### END SOLUTION


def _attend(queries, keys, values, hidden, dropout):
    """Scaled dot-product attention of [B, H, Tq, hd] queries over [B, H, Tk, hd] keys and values,
    ``hidden`` [Tq, Tk] removed; the heads merged back: -> [B, Tq, H*hd]. Your 04 attention, with the
    mask and the dropout given."""
    ### BEGIN SOLUTION
    scores = queries @ keys.transpose(2, 3) / keys.shape[-1] ** 0.5  # [B, H, Tq, Tk]
    weights = dropout(torch.softmax(scores.masked_fill(hidden, float("-inf")), dim=-1))  # [B, H, Tq, Tk]
    context = (weights @ values).transpose(1, 2)  # [B, Tq, H, hd]
    return context.reshape(context.shape[0], context.shape[1], -1)  # [B, Tq, H*hd]
    ### END SOLUTION


def _heads(x, num_heads):
    """[B, T, num_heads*hd] -> [B, num_heads, T, hd]: your 04 split_heads."""
    ### BEGIN SOLUTION
    batch, num_tokens, dim = x.shape
    return x.view(batch, num_tokens, num_heads, dim // num_heads).transpose(1, 2)
    ### END SOLUTION


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
        ### BEGIN SOLUTION
        if d_out % num_heads:
            raise ValueError(f"d_out={d_out} is not divisible by num_heads={num_heads}")
        self.num_heads = num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.reset_cache()
        ### END SOLUTION

    def reset_cache(self):
        ### BEGIN SOLUTION
        self.cache_k, self.cache_v = None, None  # [B, H, T_cached, hd] once a cached call has run
        self.position = 0  # where the next cached call's first token sits
        ### END SOLUTION

    def forward(self, x, use_cache=False):
        ### BEGIN SOLUTION
        num_tokens = x.shape[1]
        queries = _heads(self.W_query(x), self.num_heads)  # [B, H, T, hd]
        keys = _heads(self.W_key(x), self.num_heads)  # [B, H, T, hd]: the new tokens' only
        values = _heads(self.W_value(x), self.num_heads)  # [B, H, T, hd]
        start = 0
        if use_cache:
            start = self.position
            if self.cache_k is not None:
                keys = torch.cat([self.cache_k, keys], dim=2)  # [B, H, start+T, hd]
                values = torch.cat([self.cache_v, values], dim=2)  # [B, H, start+T, hd]
            self.cache_k, self.cache_v, self.position = keys, values, start + num_tokens
        hidden = sliding_window_mask(num_tokens, keys.shape[2], None, q_start=start, device=x.device)
        return self.out_proj(_attend(queries, keys, values, hidden, self.dropout))  # [B, T, d_out]
        ### END SOLUTION


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
        ### BEGIN SOLUTION
        if d_out % num_heads or num_heads % num_kv_groups:
            raise ValueError(f"d_out={d_out} must be divisible by num_heads={num_heads}, and num_heads by "
                             f"num_kv_groups={num_kv_groups}")
        self.num_heads, self.num_kv_groups = num_heads, num_kv_groups
        head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias, dtype=dtype)
        self.W_key = nn.Linear(d_in, num_kv_groups * head_dim, bias=qkv_bias, dtype=dtype)
        self.W_value = nn.Linear(d_in, num_kv_groups * head_dim, bias=qkv_bias, dtype=dtype)
        self.out_proj = nn.Linear(d_out, d_out, bias=False, dtype=dtype)
        self.dropout = nn.Dropout(dropout)
        self.reset_cache()
        ### END SOLUTION

    def reset_cache(self):
        ### BEGIN SOLUTION
        self.cache_k, self.cache_v = None, None  # [B, G, T_cached, hd]
        self.position = 0
        ### END SOLUTION

    def forward(self, x, use_cache=False):
        ### BEGIN SOLUTION
        num_tokens = x.shape[1]
        queries = _heads(self.W_query(x), self.num_heads)  # [B, H, T, hd]
        keys = _heads(self.W_key(x), self.num_kv_groups)  # [B, G, T, hd]
        values = _heads(self.W_value(x), self.num_kv_groups)  # [B, G, T, hd]
        start = 0
        if use_cache:
            start = self.position
            if self.cache_k is not None:
                keys = torch.cat([self.cache_k, keys], dim=2)  # [B, G, start+T, hd]
                values = torch.cat([self.cache_v, values], dim=2)  # [B, G, start+T, hd]
            self.cache_k, self.cache_v, self.position = keys, values, start + num_tokens
        group_size = self.num_heads // self.num_kv_groups
        keys, values = repeat_kv(keys, group_size), repeat_kv(values, group_size)  # [B, H, Tk, hd]
        hidden = sliding_window_mask(num_tokens, keys.shape[2], None, q_start=start, device=x.device)
        return self.out_proj(_attend(queries, keys, values, hidden, self.dropout))  # [B, T, d_out]
        ### END SOLUTION


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
        ### BEGIN SOLUTION
        if d_out % num_heads:
            raise ValueError(f"d_out={d_out} is not divisible by num_heads={num_heads}")
        self.num_heads, self.sliding_window_size = num_heads, sliding_window_size
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.reset_cache()
        ### END SOLUTION

    def reset_cache(self):
        ### BEGIN SOLUTION
        self.cache_k, self.cache_v = None, None  # [B, H, at most sliding_window_size, hd]
        self.position = 0
        ### END SOLUTION

    def forward(self, x, use_cache=False):
        ### BEGIN SOLUTION
        num_tokens, window = x.shape[1], self.sliding_window_size
        queries = _heads(self.W_query(x), self.num_heads)  # [B, H, T, hd]
        keys = _heads(self.W_key(x), self.num_heads)  # [B, H, T, hd]
        values = _heads(self.W_value(x), self.num_heads)  # [B, H, T, hd]
        q_start = k_start = 0
        if use_cache:
            q_start = self.position
            if self.cache_k is not None:
                keys = torch.cat([self.cache_k, keys], dim=2)  # [B, H, cached+T, hd]
                values = torch.cat([self.cache_v, values], dim=2)
            keep = keys.shape[2] if window is None else window
            self.cache_k, self.cache_v = keys[:, :, -keep:], values[:, :, -keep:]  # the last window positions
            self.position = q_start + num_tokens
            if window is not None:  # the keys some query of this call still sees
                keys, values = keys[:, :, -(window + num_tokens - 1):], values[:, :, -(window + num_tokens - 1):]
            k_start = q_start + num_tokens - keys.shape[2]  # the position of the oldest key attended
        hidden = sliding_window_mask(num_tokens, keys.shape[2], window, q_start=q_start, k_start=k_start,
                                     device=x.device)
        return self.out_proj(_attend(queries, keys, values, hidden, self.dropout))  # [B, T, d_out]
        ### END SOLUTION
