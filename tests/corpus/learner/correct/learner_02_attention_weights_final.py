"""attention_weights: scaled scores, -inf where hidden, softmax over keys, fully hidden rows set to 0 before the softmax"""
import math

import torch


def attention_weights(queries, keys, mask=None):
    d_k = keys.shape[-1]
    scores = queries @ keys.transpose(-2, -1) / math.sqrt(d_k)
    if mask is None:
        return torch.softmax(scores, dim=-1)
    scores = scores.masked_fill(mask, float("-inf"))
    all_hidden = torch.broadcast_to(mask, scores.shape).all(dim=-1, keepdim=True)
    # give fully hidden rows finite scores so softmax (and its gradient) stays finite, then zero them
    scores = scores.masked_fill(all_hidden, 0.0)
    weights = torch.softmax(scores, dim=-1)
    return weights.masked_fill(all_hidden, 0.0)
