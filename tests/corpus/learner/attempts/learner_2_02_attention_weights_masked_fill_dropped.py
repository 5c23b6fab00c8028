"""attention_weights: (deliberate) Called the non-in-place masked_fill and dropped its result, so the mask never applies."""
import math

import torch


def attention_weights(queries, keys, mask=None):
    d_k = keys.shape[-1]
    scores = queries @ keys.transpose(-2, -1) / math.sqrt(d_k)
    if mask is not None:
        scores.masked_fill(mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights
