"""attention_weights: Reads the boolean mask with SDPA convention (True = may attend), so it hides exactly the visible positions. (written blind, from the contract alone)."""
import math

import torch


def attention_weights(queries, keys, mask=None):
    d_k = keys.shape[-1]
    scores = queries @ keys.transpose(-2, -1) / math.sqrt(d_k)
    if mask is not None:
        # treats True as "may attend", as F.scaled_dot_product_attention does
        allowed = mask.to(device=scores.device, dtype=torch.bool)
        scores = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~allowed, 0.0)
    return weights
