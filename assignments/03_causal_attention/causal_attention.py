"""Assignment 03: causal attention (masking the future).

Lesson: the notebook ``causal_attention.ipynb`` beside this file. A language model predicts the next
token, so token ``i`` may attend only to tokens ``0..i``. Masks are boolean and ``True`` means hidden.
"""
import torch
from torch import nn


def causal_mask(num_tokens, device=None):
    """Boolean [T, T] mask, True strictly above the diagonal: the future is hidden.

    Lesson section 1, "Hiding the future".
    """
    # YOUR CODE HERE
    raise NotImplementedError("causal_mask is not implemented yet")


def apply_causal_mask(scores):
    """A new tensor equal to ``scores`` with the future set to -inf; ``scores`` itself is unchanged.

    scores: [..., T, T]  ->  [..., T, T]. After a softmax, the future then gets weight exactly 0.
    Lesson section 2, "Masking with -inf".
    """
    # YOUR CODE HERE
    raise NotImplementedError("apply_causal_mask is not implemented yet")


def renormalize_causal_weights(weights):
    """Zero the future of already-normalised weights, then rescale each row to sum to 1.

    weights: [..., T, T] (rows sum to 1)  ->  [..., T, T]. Same result as masking with -inf before
    the softmax; the lesson shows why.
    Lesson section 3, "Masking after the softmax".
    """
    # YOUR CODE HERE
    raise NotImplementedError("renormalize_causal_weights is not implemented yet")


def padding_mask(lengths, max_len):
    """Boolean [B, max_len] mask, True at positions >= lengths[b] (the padding is hidden).

    lengths: integer [B]  ->  bool [B, max_len], on the device of ``lengths``.
    Lesson section 4, "Padding".
    """
    # YOUR CODE HERE
    raise NotImplementedError("padding_mask is not implemented yet")


def causal_padding_mask(lengths, num_tokens):
    """Boolean [B, T, T] mask, True where query i may not see key j: j > i or j >= lengths[b].

    Lesson section 4, "Padding".
    """
    # YOUR CODE HERE
    raise NotImplementedError("causal_padding_mask is not implemented yet")


class CausalAttention(nn.Module):
    """Single-head causal self-attention with dropout on the attention weights.

    ``W_query``, ``W_key``, ``W_value``: ``nn.Linear(d_in, d_out, bias=qkv_bias)``, created in that
    order; ``dropout``: ``nn.Dropout(dropout)``; a causal mask buffer for ``context_length`` tokens.
    forward(x [B, T, d_in]) -> [B, T, d_out] for any T <= context_length. Dropout acts on the
    attention weights, after the softmax, and only in training mode.
    Lesson section 5, "A causal attention class".
    """

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        # YOUR CODE HERE
        raise NotImplementedError("CausalAttention.__init__ is not implemented yet")

    def forward(self, x):
        # YOUR CODE HERE
        raise NotImplementedError("CausalAttention.forward is not implemented yet")
