"""attention_scores: Broadcasts x[..., :, None, :] * x[..., None, :, :] in float64, sums over features, casts back to the input dtype (written blind, from the contract alone)."""
import torch


def attention_scores(inputs):
    x = inputs.to(torch.float64)
    pairwise = x.unsqueeze(-2) * x.unsqueeze(-3)   # [..., T, T, d]
    return pairwise.sum(dim=-1).to(inputs.dtype)
