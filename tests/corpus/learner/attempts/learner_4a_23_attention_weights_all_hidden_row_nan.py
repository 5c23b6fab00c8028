"""Attempt 23 at attention_weights.

MISTAKE: Scale and mask are right, but a query whose keys are all hidden is not handled: torch.softmax of an all -inf row gives NaN instead of all-zero weights.
"""
import math
import torch
from torch import nn


def attention_weights(queries, keys, mask=None):
    """MISTAKE: Scale and mask are right, but a query whose keys are all hidden is not handled: torch.softmax of an all -inf row gives NaN instead of all-zero weights."""
    d_k = keys.shape[-1]
    scores = queries @ keys.transpose(-2, -1) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask, float('-inf'))
    return torch.softmax(scores, dim=-1)
