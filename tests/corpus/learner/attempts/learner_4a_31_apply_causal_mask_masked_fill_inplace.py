"""Attempt 31 at apply_causal_mask.

MISTAKE: Uses the in-place scores.masked_fill_(...), which overwrites the caller's scores tensor, instead of masked_fill (new tensor).
"""
import torch
from torch import nn


def apply_causal_mask(scores):
    """MISTAKE: Uses the in-place scores.masked_fill_(...), which overwrites the caller's scores tensor, instead of masked_fill (new tensor)."""
    T = scores.shape[-1]
    mask = causal_mask(T, device=scores.device).bool()
    return scores.masked_fill_(mask, float('-inf'))
