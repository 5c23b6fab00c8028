"""scaled_dot_product_attention: multiplies by sqrt(d_k) instead of dividing."""
import math

import torch


def scaled_dot_product_attention(queries, keys, values, mask=None):
    scores = queries @ keys.transpose(-2, -1) * math.sqrt(keys.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask, -math.inf)
    weights = torch.softmax(scores, dim=-1)
    weights = torch.where(torch.isnan(weights), torch.zeros_like(weights), weights)
    return weights @ values
