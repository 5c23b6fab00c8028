"""attention_weights: divided the scores by d_k instead of sqrt(d_k)."""
import torch


def attention_weights(queries, keys, mask=None):
    d_k = keys.shape[-1]
    scores = queries @ keys.transpose(-2, -1) / d_k
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = torch.nan_to_num(weights, nan=0.0)
    return weights
