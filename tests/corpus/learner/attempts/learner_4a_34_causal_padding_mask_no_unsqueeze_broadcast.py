"""Attempt 34 at causal_padding_mask.

MISTAKE: ORs the [T, T] causal mask with the [B, T] padding mask directly, without viewing them as [1, T, T] and [B, 1, T]: raises when B != T, and when B == T the padding row b is applied to query b instead of to every query of sequence b.
"""
import torch
from torch import nn


def causal_padding_mask(lengths, num_tokens):
    """MISTAKE: ORs the [T, T] causal mask with the [B, T] padding mask directly, without viewing them as [1, T, T] and [B, 1, T]: raises when B != T, and when B == T the padding row b is applied to query b instead of to every query of sequence b."""
    return causal_mask(num_tokens, device=lengths.device).bool() | padding_mask(lengths, num_tokens)
