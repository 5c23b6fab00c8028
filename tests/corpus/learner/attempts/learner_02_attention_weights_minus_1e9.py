"""attention_weights: masked with -1e9 instead of -inf to avoid NaN, so fully hidden rows become uniform instead of zero"""
import math

import torch


def attention_weights(queries, keys, mask=None):
    d_k = keys.shape[-1]
    scores = queries @ keys.transpose(-2, -1) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask, -1e9)
    return torch.softmax(scores, dim=-1)
