"""Attempt 38 at renormalize_causal_weights.

MISTAKE: Keeps weights.tril(diagonal=-1), i.e. strictly below the diagonal: the diagonal (a token attending to itself) is zeroed too (off by one), so row 0 becomes 0/0 = NaN.
"""
import torch
from torch import nn


def renormalize_causal_weights(weights):
    """MISTAKE: Keeps weights.tril(diagonal=-1), i.e. strictly below the diagonal: the diagonal (a token attending to itself) is zeroed too (off by one), so row 0 becomes 0/0 = NaN."""
    T = weights.shape[-1]
    w = weights.tril(diagonal=-1)
    return w / w.sum(dim=-1, keepdim=True)
