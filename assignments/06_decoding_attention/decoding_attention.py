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
    # YOUR CODE HERE
    raise NotImplementedError("compute_rope_params is not implemented yet")


def apply_rope(x, cos, sin, offset=0):
    """Rotate each head's two halves by the angles of positions offset ... offset+T-1:
    x*cos + cat(-x2, x1)*sin, where x1, x2 are the first and second half of the features.

    x: [B, H, T, hd], cos and sin: [L, hd]  ->  [B, H, T, hd], in x's dtype.
    Lesson section 1, "Rotary positions".
    """
    # YOUR CODE HERE
    raise NotImplementedError("apply_rope is not implemented yet")


def repeat_kv(x, group_size):
    """Repeat each key/value group ``group_size`` times in a row, one copy per query head it serves:
    [K1, K2] becomes [K1, K1, K2, K2] (query head h uses group h // group_size).

    x: [B, G, T, hd]  ->  [B, G*group_size, T, hd]. Lesson section 3, "Grouped-query attention".
    """
    # YOUR CODE HERE
    raise NotImplementedError("repeat_kv is not implemented yet")


def sliding_window_mask(num_queries, num_keys, window, q_start=0, k_start=0, device=None):
    """True (hidden) where key position k_start+j is after query position q_start+i, or ``window`` or
    more tokens before it: each query sees itself and the window-1 tokens before it (window None:
    every earlier token).

    -> bool [num_queries, num_keys]. Lesson section 2, "A KV cache" (the window: section 4).
    """
    # YOUR CODE HERE
    raise NotImplementedError("sliding_window_mask is not implemented yet")


def _attend(queries, keys, values, hidden, dropout):
    """Scaled dot-product attention of [B, H, Tq, hd] queries over [B, H, Tk, hd] keys and values,
    ``hidden`` [Tq, Tk] removed; the heads merged back: -> [B, Tq, H*hd]. Your 04 attention, with the
    mask and the dropout given."""
    # YOUR CODE HERE
    raise NotImplementedError("_attend is not implemented yet")


def _heads(x, num_heads):
    """[B, T, num_heads*hd] -> [B, num_heads, T, hd]: your 04 split_heads."""
    # YOUR CODE HERE
    raise NotImplementedError("_heads is not implemented yet")


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
        # YOUR CODE HERE
        raise NotImplementedError("CachedMultiHeadAttention.__init__ is not implemented yet")

    def reset_cache(self):
        # YOUR CODE HERE
        raise NotImplementedError("CachedMultiHeadAttention.reset_cache is not implemented yet")

    def forward(self, x, use_cache=False):
        # YOUR CODE HERE
        raise NotImplementedError("CachedMultiHeadAttention.forward is not implemented yet")


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
        # YOUR CODE HERE
        raise NotImplementedError("GroupedQueryAttention.__init__ is not implemented yet")

    def reset_cache(self):
        # YOUR CODE HERE
        raise NotImplementedError("GroupedQueryAttention.reset_cache is not implemented yet")

    def forward(self, x, use_cache=False):
        # YOUR CODE HERE
        raise NotImplementedError("GroupedQueryAttention.forward is not implemented yet")


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
        # YOUR CODE HERE
        raise NotImplementedError("MultiHeadAttentionWithSWA.__init__ is not implemented yet")

    def reset_cache(self):
        # YOUR CODE HERE
        raise NotImplementedError("MultiHeadAttentionWithSWA.reset_cache is not implemented yet")

    def forward(self, x, use_cache=False):
        # YOUR CODE HERE
        raise NotImplementedError("MultiHeadAttentionWithSWA.forward is not implemented yet")
