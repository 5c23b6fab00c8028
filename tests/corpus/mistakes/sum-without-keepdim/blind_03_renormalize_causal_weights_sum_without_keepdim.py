"""renormalize_causal_weights: Divides by masked.sum(dim=-1) without keepdim, so column j is divided by row j's sum (and batched inputs fail to broadcast unless a batch size equals T) (written blind, from the contract alone)."""
import torch


def renormalize_causal_weights(weights):
    T = weights.shape[-1]
    masked = weights.masked_fill(causal_mask(T, device=weights.device), 0.0)
    return masked / masked.sum(dim=-1)
