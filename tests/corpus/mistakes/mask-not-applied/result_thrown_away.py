"""attention_weights: masked_fill's result is never used."""
import math

import torch


def attention_weights(queries, keys, mask=None):
    attn_scores = queries @ keys.transpose(-2, -1) / math.sqrt(keys.shape[-1])
    if mask is not None:
        attn_scores.masked_fill(mask, -torch.inf)
    return torch.softmax(attn_scores, dim=-1)
