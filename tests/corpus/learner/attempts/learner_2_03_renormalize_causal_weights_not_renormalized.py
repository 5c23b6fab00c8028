"""renormalize_causal_weights: (deliberate) Zeroed the future weights but forgot to divide each row by its new sum."""
import torch


def renormalize_causal_weights(weights):
    T = weights.shape[-1]
    return weights.masked_fill(causal_mask(T, device=weights.device), 0.0)
