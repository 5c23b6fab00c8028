"""Attempt 08 at softmax_naive.

MISTAKE: The denominator e.sum() sums over the whole tensor (dim argument ignored) instead of along dim, so only 1-d inputs are right.
"""
import torch


def softmax_naive(x, dim=-1):
    """MISTAKE: The denominator e.sum() sums over the whole tensor (dim argument ignored) instead of along dim, so only 1-d inputs are right."""
    e = torch.exp(x)
    return e / e.sum()
