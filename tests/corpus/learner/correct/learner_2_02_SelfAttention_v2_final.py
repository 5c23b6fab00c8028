"""SelfAttention_v2: Final correct version (helpers included)."""
import math
import torch
from torch import nn


def attention_weights(queries, keys, mask=None):
    """softmax(Q Kᵀ / sqrt(d_k)) along the keys, with hidden positions removed.

    queries: [..., Tq, dk], keys: [..., Tk, dk], mask: bool, broadcastable to [..., Tq, Tk],
    True = hidden  ->  weights: [..., Tq, Tk], each row sums to 1 over its visible keys.
    A query row whose keys are all hidden gets all-zero weights (never NaN).
    Lesson section 2, "Scaled dot-product attention".
    """
    d_k = keys.shape[-1]
    scores = queries @ keys.transpose(-2, -1) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(mask.all(dim=-1, keepdim=True), 0.0)
    return weights


def scaled_dot_product_attention(queries, keys, values, mask=None):
    """The attention weights above applied to the values.

    queries: [..., Tq, dk], keys: [..., Tk, dk], values: [..., Tk, dv]  ->  [..., Tq, dv]
    Do not call F.scaled_dot_product_attention or nn.MultiheadAttention.
    Lesson section 2, "Scaled dot-product attention".
    """
    return attention_weights(queries, keys, mask) @ values


class SelfAttention_v2(nn.Module):
    """Self-attention with ``W_query``, ``W_key``, ``W_value`` as ``nn.Linear(d_in, d_out, bias=qkv_bias)``.

    Created in that order. forward(x [T, d_in]) -> [T, d_out].
    Lesson section 4, "Using nn.Linear".
    """

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        return scaled_dot_product_attention(self.W_query(x), self.W_key(x), self.W_value(x))
