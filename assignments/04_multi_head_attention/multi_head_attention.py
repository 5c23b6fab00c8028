"""Assignment 04: multi-head attention.

Lesson: the notebook ``multi_head_attention.ipynb`` beside this file. Several heads attend in
parallel, each over its own slice of the features, and their outputs are concatenated. Shapes:
B batch, T tokens, D = H * hd features split into H heads of hd features each.

``MultiHeadAttentionWrapper`` stacks your ``CausalAttention`` from assignment 03: the grader makes
``causal_attention`` importable when it grades both together, and the notebook shows how to import it.
"""
import torch
from torch import nn


def split_heads(x, num_heads):
    """Split the features into heads: head h takes features h*D/H ... (h+1)*D/H - 1.

    x: [B, T, D]  ->  [B, H, T, D/H]. Raise ValueError if D is not divisible by num_heads.
    Works for non-contiguous ``x`` too. Lesson section 2, "Splitting into heads".
    """
    # YOUR CODE HERE
    raise NotImplementedError("split_heads is not implemented yet")


def merge_heads(x):
    """The inverse of ``split_heads``: concatenate the heads' features again.

    x: [B, H, T, hd]  ->  [B, T, H*hd], also for non-contiguous ``x``.
    Lesson section 2, "Splitting into heads".
    """
    # YOUR CODE HERE
    raise NotImplementedError("merge_heads is not implemented yet")


def split_qkv(qkv, num_heads):
    """Split a fused projection into per-head queries, keys and values.

    qkv: [B, T, 3D] laid out as reshape(B, T, 3, H, D/H).permute(2, 0, 3, 1, 4)
    ->  (q, k, v), each [B, H, T, D/H]. Raise ValueError if 3D is not 3 * a multiple of num_heads.
    Lesson section 5, "Fused QKV".
    """
    # YOUR CODE HERE
    raise NotImplementedError("split_qkv is not implemented yet")


class MultiHeadAttentionWrapper(nn.Module):
    """``num_heads`` independent ``CausalAttention(d_in, d_out, ...)`` heads, outputs concatenated.

    ``heads``: ``nn.ModuleList`` of the heads. forward(x [B, T, d_in]) -> [B, T, num_heads*d_out],
    head 0's features first. Lesson section 1, "Stacking single heads".
    """

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        # YOUR CODE HERE
        raise NotImplementedError("MultiHeadAttentionWrapper.__init__ is not implemented yet")

    def forward(self, x):
        # YOUR CODE HERE
        raise NotImplementedError("MultiHeadAttentionWrapper.forward is not implemented yet")


class MultiHeadAttention(nn.Module):
    """Causal multi-head attention with one projection per role, split into heads.

    ``W_query``, ``W_key``, ``W_value``: ``Linear(d_in, d_out, bias=qkv_bias)``; ``out_proj``:
    ``Linear(d_out, d_out)``; created in that order. ``dropout`` on the attention weights; a causal
    mask buffer. Scores are scaled by 1/sqrt(head_dim), head_dim = d_out / num_heads.
    Raise ValueError at construction if d_out is not divisible by num_heads.
    forward(x [B, T, d_in]) -> [B, T, d_out]. Lesson section 3, "Multi-head attention".
    """

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        # YOUR CODE HERE
        raise NotImplementedError("MultiHeadAttention.__init__ is not implemented yet")

    def forward(self, x):
        # YOUR CODE HERE
        raise NotImplementedError("MultiHeadAttention.forward is not implemented yet")


class FusedQKVAttention(nn.Module):
    """Non-causal multi-head attention with one fused projection and a skip connection through V.

    ``qkv``: ``Linear(dim, 3*chan, bias=qkv_bias)``, laid out as in ``split_qkv``; ``proj``:
    ``Linear(chan, chan)``. Scores are scaled by ``qk_scale or head_dim**-0.5``, head_dim =
    chan / num_heads. Output: proj(attention) + v, with v merged back to [B, N, chan] (the skip
    connection runs through V because the input has ``dim`` features, not ``chan``).
    Raise ValueError at construction if chan is not divisible by num_heads.
    forward(x [B, N, dim]) -> [B, N, chan]. Lesson section 5, "Fused QKV".
    """

    def __init__(self, dim, chan, num_heads=1, qkv_bias=False, qk_scale=None):
        super().__init__()
        # YOUR CODE HERE
        raise NotImplementedError("FusedQKVAttention.__init__ is not implemented yet")

    def forward(self, x):
        # YOUR CODE HERE
        raise NotImplementedError("FusedQKVAttention.forward is not implemented yet")
