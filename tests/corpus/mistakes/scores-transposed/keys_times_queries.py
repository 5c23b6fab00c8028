"""attention_weights: keys against queries."""
import math

import torch


def attention_weights(queries, keys, mask=None):
    scores = keys @ queries.transpose(-2, -1) / math.sqrt(keys.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    return torch.softmax(scores, dim=-1)
