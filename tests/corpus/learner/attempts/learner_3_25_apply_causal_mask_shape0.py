"""apply_causal_mask: read T from scores.shape[0], which is the batch size for batched scores, instead of shape[-1]."""
import torch


def apply_causal_mask(scores):
    T = scores.shape[0]
    mask = causal_mask(T, device=scores.device)
    return scores.masked_fill(mask, float("-inf"))
