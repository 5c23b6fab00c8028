"""renormalize_causal_weights: zeroes the future and stops there."""
import torch


def renormalize_causal_weights(weights):
    T = weights.shape[-1]
    keep = torch.tril(torch.ones(T, T, device=weights.device, dtype=weights.dtype))
    return weights * keep
