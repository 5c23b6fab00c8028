"""renormalize_causal_weights: zeroes the future in place, then divides."""
import torch


def renormalize_causal_weights(weights):
    T = weights.shape[-1]
    weights[..., torch.triu(torch.ones(T, T, dtype=torch.bool, device=weights.device), 1)] = 0
    return weights / weights.sum(-1, keepdim=True)
