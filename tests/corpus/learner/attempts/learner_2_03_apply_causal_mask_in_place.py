"""apply_causal_mask: (deliberate) masked_fill_ in place: the caller's scores tensor is overwritten."""
import torch


def apply_causal_mask(scores):
    T = scores.shape[-1]
    return scores.masked_fill_(causal_mask(T, device=scores.device), float("-inf"))
