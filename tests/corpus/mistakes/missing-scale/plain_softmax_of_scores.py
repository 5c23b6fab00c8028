"""attention_weights: softmax of the raw dot products."""
import torch


def attention_weights(queries, keys, mask=None):
    scores = queries @ keys.mT
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(mask.all(-1, keepdim=True), 0.0)
    return weights
