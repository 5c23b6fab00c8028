"""Attempt 40 at causal_padding_mask.

MISTAKE: The padding mask is viewed as [B, T, 1] (padding_mask[:, :, None]) instead of [B, 1, T]: it hides every key from padded QUERIES rather than hiding padded KEYS from every query.
"""
import torch
from torch import nn


def causal_padding_mask(lengths, num_tokens):
    """MISTAKE: The padding mask is viewed as [B, T, 1] (padding_mask[:, :, None]) instead of [B, 1, T]: it hides every key from padded QUERIES rather than hiding padded KEYS from every query."""
    return causal_mask(num_tokens, device=lengths.device)[None, :, :] | padding_mask(lengths, num_tokens)[:, :, None]
