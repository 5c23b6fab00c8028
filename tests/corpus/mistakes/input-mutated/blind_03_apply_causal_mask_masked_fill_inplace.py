"""apply_causal_mask: Uses masked_fill_ on the caller's scores and returns them: right values, input overwritten (raises on a leaf that requires grad) (written blind, from the contract alone)."""
import torch


def apply_causal_mask(scores):
    T = scores.shape[-1]
    scores.masked_fill_(causal_mask(T, device=scores.device), float("-inf"))
    return scores
