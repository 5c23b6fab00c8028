"""CausalAttention: Final correct version (helper causal_mask included)."""
import torch
from torch import nn


def causal_mask(num_tokens, device=None):
    """Boolean [T, T] mask, True strictly above the diagonal: the future is hidden.

    Lesson section 1, "Hiding the future".
    """
    return torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool, device=device), diagonal=1)


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
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        b, T, _ = x.shape
        queries = self.W_query(x)
        keys = self.W_key(x)
        values = self.W_value(x)
        scores = queries @ keys.transpose(-2, -1)
        scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))
        weights = torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)
        weights = self.dropout(weights)
        return weights @ values
