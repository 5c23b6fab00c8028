"""apply_causal_mask: used masked_fill_ (in place), which overwrites the caller's scores tensor."""
import torch


def apply_causal_mask(scores):
    mask = causal_mask(scores.shape[-1], device=scores.device)
    return scores.masked_fill_(mask, float("-inf"))
