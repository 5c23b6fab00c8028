"""attention_weights: (common slip) masked with a large negative number (-1e9) instead of -inf, so a query whose keys are all hidden gets uniform weights instead of zeros."""
import math

import torch


def attention_weights(queries, keys, mask=None):
    scores = queries @ keys.transpose(-2, -1) / math.sqrt(keys.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask, -1e9)
    return torch.softmax(scores, dim=-1)
