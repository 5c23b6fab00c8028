"""Attempt 32 at renormalize_causal_weights.

MISTAKE: Divides by w.sum(dim=-1) without keepdim=True: the [..., T] row sums broadcast along the last dim, so entry (i, j) is divided by row j's sum (silently wrong for square tables).
"""
import torch
from torch import nn


def renormalize_causal_weights(weights):
    """MISTAKE: Divides by w.sum(dim=-1) without keepdim=True: the [..., T] row sums broadcast along the last dim, so entry (i, j) is divided by row j's sum (silently wrong for square tables)."""
    T = weights.shape[-1]
    mask = causal_mask(T, device=weights.device).bool()
    w = weights.masked_fill(mask, 0.0)
    return w / w.sum(dim=-1)
