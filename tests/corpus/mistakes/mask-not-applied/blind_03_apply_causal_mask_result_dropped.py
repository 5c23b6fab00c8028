"""apply_causal_mask: Clones the scores, calls non-in-place masked_fill on the clone and drops its result, returning the unmasked copy (written blind, from the contract alone)."""
import torch


def apply_causal_mask(scores):
    T = scores.shape[-1]
    out = scores.clone()  # copy so the input is not modified
    out.masked_fill(causal_mask(T, device=scores.device), float("-inf"))
    return out
