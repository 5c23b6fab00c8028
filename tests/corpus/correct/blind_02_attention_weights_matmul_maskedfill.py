"""attention_weights: matmul with transpose(-2, -1), divide by math.sqrt(d_k), masked_fill with finfo.min before softmax and masked_fill 0 after it. (written blind, from the contract alone)."""
import math

import torch


def attention_weights(queries, keys, mask=None):
    """softmax(Q K^T / sqrt(d_k)) over the keys, hidden positions (mask True) get weight 0."""
    d_k = keys.shape[-1]
    scores = torch.matmul(queries, keys.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        mask = mask.to(device=scores.device, dtype=torch.bool)
        # a large finite negative number instead of -inf: an all-hidden row stays finite
        scores = scores.masked_fill(mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        # hidden positions are exactly 0; an all-hidden row becomes all zeros
        weights = weights.masked_fill(mask, 0.0)
    return weights
