"""Attempt 17 at attention_weights.

MISTAKE: Scores are divided by d_k (keys.shape[-1]) instead of sqrt(d_k); also the all-hidden row is not handled (torch.softmax gives NaN there).
"""
import math
import torch
from torch import nn


def attention_weights(queries, keys, mask=None):
    """MISTAKE: Scores are divided by d_k (keys.shape[-1]) instead of sqrt(d_k); also the all-hidden row is not handled (torch.softmax gives NaN there)."""
    d_k = keys.shape[-1]
    scores = queries @ keys.transpose(-2, -1) / d_k
    if mask is not None:
        scores = scores.masked_fill(mask, float('-inf'))
    return torch.softmax(scores, dim=-1)
