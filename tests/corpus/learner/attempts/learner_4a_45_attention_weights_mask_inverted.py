"""Attempt 45 at attention_weights (common slip).

MISTAKE: (common slip) The mask is inverted (~mask, the F.scaled_dot_product_attention convention): the visible keys are filled with -inf and the hidden ones kept.
"""
import math

import torch


def attention_weights(queries, keys, mask=None):
    """MISTAKE: (common slip) fills ~mask instead of mask (True means hidden in this course)."""
    scores = queries @ keys.transpose(-2, -1) / math.sqrt(keys.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill((~mask).all(dim=-1, keepdim=True), 0.0)
    return weights
