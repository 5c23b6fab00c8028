"""scaled_dot_product_attention: Normalises the weights over the queries (softmax dim=-2) instead of over the keys. (written blind, from the contract alone)."""
import math

import torch


def scaled_dot_product_attention(queries, keys, values, mask=None):
    scores = torch.matmul(queries, keys.transpose(-2, -1)) / math.sqrt(keys.shape[-1])
    if mask is not None:
        mask = mask.to(device=scores.device, dtype=torch.bool)
        scores = scores.masked_fill(mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-2)
    if mask is not None:
        weights = weights.masked_fill(mask, 0.0)
    return torch.matmul(weights, values)
