"""renormalize_causal_weights: zero the future, divide each row by its remaining sum"""
import torch


def renormalize_causal_weights(weights):
    T = weights.shape[-1]
    masked = weights.masked_fill(causal_mask(T, device=weights.device), 0.0)
    return masked / masked.sum(dim=-1, keepdim=True)
