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
    ### BEGIN SOLUTION
    batch, num_tokens, dim = x.shape
    if dim % num_heads:
        raise ValueError(f"the feature size {dim} is not divisible by num_heads={num_heads}")
    x = x.reshape(batch, num_tokens, num_heads, dim // num_heads)  # [B, T, H, hd]
    return x.transpose(1, 2)  # [B, H, T, hd]
    ### END SOLUTION


def merge_heads(x):
    """The inverse of ``split_heads``: concatenate the heads' features again.

    x: [B, H, T, hd]  ->  [B, T, H*hd], also for non-contiguous ``x``.
    Lesson section 2, "Splitting into heads".
    """
    ### BEGIN SOLUTION
    batch, num_heads, num_tokens, head_dim = x.shape
    x = x.transpose(1, 2)  # [B, T, H, hd], no longer contiguous
    return x.reshape(batch, num_tokens, num_heads * head_dim)  # [B, T, D]
    ### END SOLUTION


def split_qkv(qkv, num_heads):
    """Split a fused projection into per-head queries, keys and values.

    qkv: [B, T, 3D] laid out as reshape(B, T, 3, H, D/H).permute(2, 0, 3, 1, 4)
    ->  (q, k, v), each [B, H, T, D/H]. Raise ValueError if 3D is not 3 * a multiple of num_heads.
    Lesson section 5, "Fused QKV".
    """
    ### BEGIN SOLUTION
    batch, num_tokens, three_dim = qkv.shape
    if three_dim % (3 * num_heads):
        raise ValueError(f"the fused size {three_dim} is not divisible by 3 * num_heads={3 * num_heads}")
    qkv = qkv.reshape(batch, num_tokens, 3, num_heads, three_dim // (3 * num_heads))  # [B, T, 3, H, hd]
    q, k, v = qkv.permute(2, 0, 3, 1, 4)  # each [B, H, T, hd]
    return q, k, v
    ### END SOLUTION


class MultiHeadAttentionWrapper(nn.Module):
    """``num_heads`` independent ``CausalAttention(d_in, d_out, ...)`` heads, outputs concatenated.

    ``heads``: ``nn.ModuleList`` of the heads. forward(x [B, T, d_in]) -> [B, T, num_heads*d_out],
    head 0's features first. Lesson section 1, "Stacking single heads".
    """

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        ### BEGIN SOLUTION
        from causal_attention import CausalAttention  # your class from assignment 03

        self.heads = nn.ModuleList(
            CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)
        )
        ### END SOLUTION

    def forward(self, x):
        ### BEGIN SOLUTION
        return torch.cat([head(x) for head in self.heads], dim=-1)  # [B, T, H*d_out]
        ### END SOLUTION


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
        ### BEGIN SOLUTION
        if d_out % num_heads:
            raise ValueError(f"d_out={d_out} is not divisible by num_heads={num_heads}")
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), 1))
        ### END SOLUTION

    def forward(self, x):
        ### BEGIN SOLUTION
        num_tokens = x.shape[1]
        queries = split_heads(self.W_query(x), self.num_heads)  # [B, H, T, hd]
        keys = split_heads(self.W_key(x), self.num_heads)  # [B, H, T, hd]
        values = split_heads(self.W_value(x), self.num_heads)  # [B, H, T, hd]
        scores = queries @ keys.transpose(2, 3)  # [B, H, T, T]
        scores = scores.masked_fill(self.mask[:num_tokens, :num_tokens], float("-inf"))
        weights = torch.softmax(scores / self.head_dim**0.5, dim=-1)  # [B, H, T, T]
        weights = self.dropout(weights)
        context = merge_heads(weights @ values)  # [B, T, d_out]
        return self.out_proj(context)  # [B, T, d_out]
        ### END SOLUTION


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
        ### BEGIN SOLUTION
        if chan % num_heads:
            raise ValueError(f"chan={chan} is not divisible by num_heads={num_heads}")
        self.num_heads = num_heads
        self.scale = qk_scale or (chan // num_heads) ** -0.5
        self.qkv = nn.Linear(dim, 3 * chan, bias=qkv_bias)
        self.proj = nn.Linear(chan, chan)
        ### END SOLUTION

    def forward(self, x):
        ### BEGIN SOLUTION
        q, k, v = split_qkv(self.qkv(x), self.num_heads)  # each [B, H, N, hd]
        weights = torch.softmax((q * self.scale) @ k.transpose(-2, -1), dim=-1)  # [B, H, N, N]
        attended = merge_heads(weights @ v)  # [B, N, chan]
        return self.proj(attended) + merge_heads(v)  # skip connection through V
        ### END SOLUTION
