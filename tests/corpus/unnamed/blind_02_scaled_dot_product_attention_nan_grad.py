"""scaled_dot_product_attention: Additive -inf bias plus nan_to_num after softmax: all-hidden rows output zeros, but their gradients to queries and keys are NaN. (written blind, from the contract alone). The blind author filed it as unnamed."""
import math

import torch


def scaled_dot_product_attention(queries, keys, values, mask=None):
    scores = queries @ keys.transpose(-2, -1) / math.sqrt(keys.shape[-1])
    if mask is not None:
        mask = mask.to(device=scores.device, dtype=torch.bool)
        bias = torch.zeros(mask.shape, dtype=scores.dtype, device=scores.device)
        scores = scores + bias.masked_fill(mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    # all-hidden rows give NaN: replace them by zeros (the forward output is then right)
    weights = torch.nan_to_num(weights, nan=0.0)
    return weights @ values
