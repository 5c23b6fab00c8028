"""renormalize_causal_weights: torch.where keeps visible weights, row sums via a matmul with a ones column, then divides (written blind, from the contract alone)."""
import torch


def renormalize_causal_weights(weights):
    T = weights.size(-1)
    pos = torch.arange(T, device=weights.device)
    visible = pos.view(1, T) <= pos.view(T, 1)
    kept = torch.where(visible, weights, torch.zeros_like(weights))
    ones = torch.ones(T, 1, dtype=weights.dtype, device=weights.device)
    totals = kept @ ones  # [..., T, 1] row sums
    return kept / totals
