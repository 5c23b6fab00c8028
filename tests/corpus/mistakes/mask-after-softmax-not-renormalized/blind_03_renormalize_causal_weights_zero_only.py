"""renormalize_causal_weights: Zeros the future weights with masked_fill but never rescales the rows, so they sum to less than 1 (written blind, from the contract alone)."""
import torch


def renormalize_causal_weights(weights):
    T = weights.shape[-1]
    return weights.masked_fill(causal_mask(T, device=weights.device), 0.0)
