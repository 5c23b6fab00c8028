"""attention_weights: Correct masked softmax of Q Kᵀ but the scores are never divided by sqrt(d_k). (written blind, from the contract alone)."""
import torch


def attention_weights(queries, keys, mask=None):
    scores = torch.matmul(queries, keys.transpose(-2, -1))
    if mask is not None:
        mask = mask.to(device=scores.device, dtype=torch.bool)
        scores = scores.masked_fill(mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(mask, 0.0)
    return weights
