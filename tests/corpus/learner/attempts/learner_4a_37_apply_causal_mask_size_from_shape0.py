"""Attempt 37 at apply_causal_mask.

MISTAKE: The mask size is read from scores.shape[0] (the batch size for batched scores) instead of scores.shape[-1] (T): right for a single [T, T] table, wrong/raises for [..., T, T] batches.
"""
import torch
from torch import nn


def apply_causal_mask(scores):
    """MISTAKE: The mask size is read from scores.shape[0] (the batch size for batched scores) instead of scores.shape[-1] (T): right for a single [T, T] table, wrong/raises for [..., T, T] batches."""
    T = scores.shape[0]
    mask = causal_mask(T, device=scores.device)
    return scores.masked_fill(mask, float('-inf'))
