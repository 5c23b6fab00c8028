"""SelfAttention_v1: Final correct version (helpers included)."""
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


class SelfAttention_v1(nn.Module):
    """Self-attention with weight matrices ``W_query``, ``W_key``, ``W_value``.

    Each is an ``nn.Parameter`` of shape [d_in, d_out], created in that order with ``torch.rand``
    and applied as ``x @ W``. forward(x [T, d_in]) -> [T, d_out] for one sequence.
    Lesson section 3, "A self-attention class".
    """

    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        queries = x @ self.W_query
        keys = x @ self.W_key
        values = x @ self.W_value
        return scaled_dot_product_attention(queries, keys, values)
