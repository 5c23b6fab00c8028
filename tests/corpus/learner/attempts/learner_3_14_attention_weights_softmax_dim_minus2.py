"""attention_weights: took the softmax along dim=-2 (over the queries) instead of dim=-1 (over the keys)."""
import math

import torch


def attention_weights(queries, keys, mask=None):
    scores = queries @ keys.transpose(-2, -1) / math.sqrt(keys.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = torch.softmax(scores, dim=-2)
    if mask is not None:
        weights = torch.nan_to_num(weights, nan=0.0)
    return weights
