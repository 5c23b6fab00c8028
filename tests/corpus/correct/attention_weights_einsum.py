"""attention_weights: einsum scores, torch.where for the mask, fully hidden rows zeroed."""
import math

import torch


def attention_weights(queries, keys, mask=None):
    scores = torch.einsum("...qd,...kd->...qk", queries, keys) / math.sqrt(keys.size(-1))
    if mask is None:
        return scores.softmax(dim=-1)
    scores = torch.where(mask, torch.tensor(float("-inf"), dtype=scores.dtype), scores)
    weights = scores.softmax(dim=-1)
    return torch.where(torch.isnan(weights), torch.zeros_like(weights), weights)
