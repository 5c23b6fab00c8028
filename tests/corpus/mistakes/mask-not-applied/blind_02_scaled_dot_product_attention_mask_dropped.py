"""scaled_dot_product_attention: Calls the non-in-place scores.masked_fill(mask, -inf) and drops its result, so the mask has no effect. (written blind, from the contract alone)."""
import math

import torch


def scaled_dot_product_attention(queries, keys, values, mask=None):
    scores = queries @ keys.transpose(-2, -1) / math.sqrt(keys.shape[-1])
    if mask is not None:
        scores.masked_fill(mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ values
