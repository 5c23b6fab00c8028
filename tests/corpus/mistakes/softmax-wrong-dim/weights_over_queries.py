"""attention_weights: the softmax runs down the columns."""
import math

import torch


def attention_weights(queries, keys, mask=None):
    scores = torch.matmul(queries, keys.transpose(-1, -2)) / math.sqrt(queries.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask, -torch.inf)
    weights = torch.softmax(scores, dim=-2)
    return torch.nan_to_num(weights, nan=0.0)
