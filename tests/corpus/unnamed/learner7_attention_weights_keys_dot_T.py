"""attention_weights: keys.T, which reverses every dimension of batched keys (round 7 learner: a traceback alone before)."""
import math

import torch

from torch import nn

def attention_weights(queries, keys, mask=None):
    d_k = keys.shape[-1]
    scores = queries @ keys.T / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(mask.all(dim=-1, keepdim=True), 0.0)
    return weights
