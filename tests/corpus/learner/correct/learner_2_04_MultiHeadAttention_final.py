"""MultiHeadAttention: Final correct version (helpers included)."""
import torch
from torch import nn


def split_heads(x, num_heads):
    """Split the features into heads: head h takes features h*D/H ... (h+1)*D/H - 1.

    x: [B, T, D]  ->  [B, H, T, D/H]. Raise ValueError if D is not divisible by num_heads.
    Works for non-contiguous ``x`` too. Lesson section 2, "Splitting into heads".
    """
    B, T, D = x.shape
    if D % num_heads != 0:
        raise ValueError(f"D = {D} is not divisible by num_heads = {num_heads}")
    return x.reshape(B, T, num_heads, D // num_heads).transpose(1, 2)


def merge_heads(x):
    """The inverse of ``split_heads``: concatenate the heads' features again.

    x: [B, H, T, hd]  ->  [B, T, H*hd], also for non-contiguous ``x``.
    Lesson section 2, "Splitting into heads".
    """
    B, H, T, hd = x.shape
    return x.transpose(1, 2).reshape(B, T, H * hd)


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
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), diagonal=1))

    def forward(self, x):
        B, T, _ = x.shape
        queries = split_heads(self.W_query(x), self.num_heads)
        keys = split_heads(self.W_key(x), self.num_heads)
        values = split_heads(self.W_value(x), self.num_heads)
        scores = queries @ keys.transpose(2, 3)
        scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))
        weights = torch.softmax(scores / self.head_dim ** 0.5, dim=-1)
        weights = self.dropout(weights)
        context = merge_heads(weights @ values)
        return self.out_proj(context)
