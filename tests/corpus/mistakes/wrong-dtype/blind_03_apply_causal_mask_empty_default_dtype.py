"""apply_causal_mask: Copies the scores into torch.empty(shape) without dtype=, so float64 scores come back as float32 (values otherwise right) (written blind, from the contract alone)."""
import torch


def apply_causal_mask(scores):
    T = scores.shape[-1]
    out = torch.empty(scores.shape, device=scores.device)  # a new tensor, so the input stays unchanged
    out.copy_(scores)
    out.masked_fill_(causal_mask(T, device=scores.device), float("-inf"))
    return out
