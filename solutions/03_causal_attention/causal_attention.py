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
    ### BEGIN SOLUTION
    ones = torch.ones(num_tokens, num_tokens, dtype=torch.bool, device=device)  # [T, T]
    return torch.triu(ones, diagonal=1)  # True where key j > query i
    ### END SOLUTION


def apply_causal_mask(scores):
    """A new tensor equal to ``scores`` with the future set to -inf; ``scores`` itself is unchanged.

    scores: [..., T, T]  ->  [..., T, T]. After a softmax, the future then gets weight exactly 0.
    Lesson section 2, "Masking with -inf".
    """
    ### BEGIN SOLUTION
    mask = causal_mask(scores.shape[-1], device=scores.device)  # [T, T]
    return scores.masked_fill(mask, float("-inf"))  # [..., T, T]
    ### END SOLUTION


def renormalize_causal_weights(weights):
    """Zero the future of already-normalised weights, then rescale each row to sum to 1.

    weights: [..., T, T] (rows sum to 1)  ->  [..., T, T]. Same result as masking with -inf before
    the softmax; the lesson shows why.
    Lesson section 3, "Masking after the softmax".
    """
    ### BEGIN SOLUTION
    mask = causal_mask(weights.shape[-1], device=weights.device)  # [T, T]
    masked = weights.masked_fill(mask, 0.0)  # [..., T, T]
    return masked / masked.sum(dim=-1, keepdim=True)  # rows sum to 1 again
    ### END SOLUTION


def padding_mask(lengths, max_len):
    """Boolean [B, max_len] mask, True at positions >= lengths[b] (the padding is hidden).

    lengths: integer [B]  ->  bool [B, max_len], on the device of ``lengths``.
    Lesson section 4, "Padding".
    """
    ### BEGIN SOLUTION
    positions = torch.arange(max_len, device=lengths.device)  # [max_len]
    return positions >= lengths[:, None]  # [B, max_len]
    ### END SOLUTION


def causal_padding_mask(lengths, num_tokens):
    """Boolean [B, T, T] mask, True where query i may not see key j: j > i or j >= lengths[b].

    Lesson section 4, "Padding".
    """
    ### BEGIN SOLUTION
    future = causal_mask(num_tokens, device=lengths.device)  # [T, T]
    padding = padding_mask(lengths, num_tokens)  # [B, T]
    return future[None, :, :] | padding[:, None, :]  # [B, T, T]
    ### END SOLUTION


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
        ### BEGIN SOLUTION
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))  # [context_length, context_length]
        ### END SOLUTION

    def forward(self, x):
        ### BEGIN SOLUTION
        num_tokens = x.shape[1]
        queries = self.W_query(x)  # [B, T, d_out]
        keys = self.W_key(x)  # [B, T, d_out]
        values = self.W_value(x)  # [B, T, d_out]
        scores = queries @ keys.transpose(1, 2)  # [B, T, T]
        scores = scores.masked_fill(self.mask[:num_tokens, :num_tokens], float("-inf"))
        weights = torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)  # [B, T, T]
        weights = self.dropout(weights)
        return weights @ values  # [B, T, d_out]
        ### END SOLUTION
