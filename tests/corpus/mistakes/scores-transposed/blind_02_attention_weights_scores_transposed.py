"""attention_weights: Computes K Qᵀ (einsum "...kd,...qd->...kq") instead of Q Kᵀ, otherwise correct scaling, masking and softmax. (written blind, from the contract alone)."""
import math

import torch


def attention_weights(queries, keys, mask=None):
    d_k = keys.shape[-1]
    scores = torch.einsum("...kd,...qd->...kq", keys, queries) / math.sqrt(d_k)
    if mask is not None:
        mask = mask.to(device=scores.device, dtype=torch.bool)
        scores = scores.masked_fill(mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(mask, 0.0)
    return weights
