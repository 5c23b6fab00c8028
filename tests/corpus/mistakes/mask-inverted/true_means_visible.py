"""attention_weights: keeps the positions where the mask is True."""
import math

import torch


def attention_weights(queries, keys, mask=None):
    scores = queries @ keys.transpose(-2, -1) / math.sqrt(keys.shape[-1])
    if mask is not None:
        scores = torch.where(mask, scores, torch.full_like(scores, -math.inf))
    return torch.nan_to_num(torch.softmax(scores, -1))
