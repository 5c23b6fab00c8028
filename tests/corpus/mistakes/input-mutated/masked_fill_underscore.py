"""apply_causal_mask: masks the scores in place and returns them."""
import torch


def apply_causal_mask(scores):
    T = scores.shape[-1]
    future = torch.triu(torch.ones(T, T, dtype=torch.bool, device=scores.device), 1)
    scores.masked_fill_(future, float("-inf"))
    return scores
