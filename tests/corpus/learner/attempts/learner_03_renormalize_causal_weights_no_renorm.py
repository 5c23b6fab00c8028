"""renormalize_causal_weights: zeroed the future weights but forgot to rescale the rows to sum to 1"""
import torch


def renormalize_causal_weights(weights):
    T = weights.shape[-1]
    return weights.masked_fill(causal_mask(T, device=weights.device), 0.0)
