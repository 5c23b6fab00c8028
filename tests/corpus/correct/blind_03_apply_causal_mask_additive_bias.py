"""apply_causal_mask: Adds a [T, T] additive bias (0 visible, -inf future) of the scores' dtype (written blind, from the contract alone)."""
import torch


def apply_causal_mask(scores):
    T = scores.shape[-1]
    # additive mask: 0 where visible, -inf in the future (same dtype as the scores)
    bias = torch.zeros(T, T, dtype=scores.dtype, device=scores.device)
    bias = bias.masked_fill(causal_mask(T, device=scores.device), float("-inf"))
    return scores + bias
