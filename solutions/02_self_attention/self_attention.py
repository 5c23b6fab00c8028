"""Assignment 02: self-attention with trainable weights.

Lesson: the notebook ``self_attention.ipynb`` beside this file. Queries, keys and values are
projections of the inputs; scores are scaled by 1/sqrt(d_k) so that the softmax does not saturate
as the key size grows.

Masks are boolean and ``True`` means hidden: the position may not be attended to (as in
``nn.MultiheadAttention``; the inverse of ``F.scaled_dot_product_attention``'s boolean mask).
"""
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
    ### BEGIN SOLUTION
    scores = queries @ keys.transpose(-2, -1) / math.sqrt(keys.shape[-1])  # [..., Tq, Tk]
    if mask is None:
        return torch.softmax(scores, dim=-1)
    scores = scores.masked_fill(mask, float("-inf"))  # hidden keys get weight 0
    weights = torch.softmax(scores, dim=-1)  # [..., Tq, Tk]
    return weights.masked_fill(mask.all(dim=-1, keepdim=True), 0.0)  # fully hidden rows: 0, not NaN
    ### END SOLUTION


def scaled_dot_product_attention(queries, keys, values, mask=None):
    """The attention weights above applied to the values.

    queries: [..., Tq, dk], keys: [..., Tk, dk], values: [..., Tk, dv]  ->  [..., Tq, dv]
    Do not call F.scaled_dot_product_attention or nn.MultiheadAttention.
    Lesson section 2, "Scaled dot-product attention".
    """
    ### BEGIN SOLUTION
    return attention_weights(queries, keys, mask) @ values  # [..., Tq, dv]
    ### END SOLUTION


class SelfAttention_v1(nn.Module):
    """Self-attention with weight matrices ``W_query``, ``W_key``, ``W_value``.

    Each is an ``nn.Parameter`` of shape [d_in, d_out], created in that order with ``torch.rand``
    and applied as ``x @ W``. forward(x [T, d_in]) -> [T, d_out] for one sequence.
    Lesson section 3, "A self-attention class".
    """

    def __init__(self, d_in, d_out):
        super().__init__()
        ### BEGIN SOLUTION
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))
        ### END SOLUTION

    def forward(self, x):
        ### BEGIN SOLUTION
        queries = x @ self.W_query  # [T, d_out]
        keys = x @ self.W_key  # [T, d_out]
        values = x @ self.W_value  # [T, d_out]
        return scaled_dot_product_attention(queries, keys, values)  # [T, d_out]
        ### END SOLUTION


class SelfAttention_v2(nn.Module):
    """Self-attention with ``W_query``, ``W_key``, ``W_value`` as ``nn.Linear(d_in, d_out, bias=qkv_bias)``.

    Created in that order. forward(x [T, d_in]) -> [T, d_out].
    Lesson section 4, "Using nn.Linear".
    """

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        ### BEGIN SOLUTION
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        ### END SOLUTION

    def forward(self, x):
        ### BEGIN SOLUTION
        queries = self.W_query(x)  # [T, d_out]
        keys = self.W_key(x)  # [T, d_out]
        values = self.W_value(x)  # [T, d_out]
        return scaled_dot_product_attention(queries, keys, values)  # [T, d_out]
        ### END SOLUTION


def copy_v2_weights_into_v1(v2, v1):
    """Load a SelfAttention_v2's weights into a SelfAttention_v1 so both give the same output.

    ``nn.Linear`` stores its weight as [d_out, d_in] and computes x @ weightᵀ; v1 computes x @ W
    with W: [d_in, d_out]. Modify ``v1`` in place and return None. A v2 with biases cannot be copied
    (v1 has none): raise ValueError.
    Lesson section 4, "Using nn.Linear".
    """
    ### BEGIN SOLUTION
    if v2.W_query.bias is not None:
        raise ValueError("SelfAttention_v1 has no biases; build the v2 with qkv_bias=False")
    with torch.no_grad():
        v1.W_query.copy_(v2.W_query.weight.T)  # [d_in, d_out]
        v1.W_key.copy_(v2.W_key.weight.T)
        v1.W_value.copy_(v2.W_value.weight.T)
    ### END SOLUTION


class CrossAttention(nn.Module):
    """Attention of one sequence (the queries) over another (the keys and values).

    ``W_query: Linear(d_in_q, d_k)``, ``W_key: Linear(d_in_kv, d_k)``, ``W_value: Linear(d_in_kv, d_v)``.
    forward(x_q [..., Tq, d_in_q], x_kv [..., Tk, d_in_kv]) -> [..., Tq, d_v]. Queries and keys must
    share d_k; the values may have any size d_v.
    Lesson section 5, "Cross-attention".
    """

    def __init__(self, d_in_q, d_in_kv, d_k, d_v, qkv_bias=False):
        super().__init__()
        ### BEGIN SOLUTION
        self.W_query = nn.Linear(d_in_q, d_k, bias=qkv_bias)
        self.W_key = nn.Linear(d_in_kv, d_k, bias=qkv_bias)
        self.W_value = nn.Linear(d_in_kv, d_v, bias=qkv_bias)
        ### END SOLUTION

    def forward(self, x_q, x_kv):
        ### BEGIN SOLUTION
        queries = self.W_query(x_q)  # [..., Tq, d_k]
        keys = self.W_key(x_kv)  # [..., Tk, d_k]
        values = self.W_value(x_kv)  # [..., Tk, d_v]
        return scaled_dot_product_attention(queries, keys, values)  # [..., Tq, d_v]
        ### END SOLUTION
