"""apply_causal_mask: Non-in-place masked_fill with causal_mask built on scores.device, broadcast over leading dims (written blind, from the contract alone)."""
import torch


def apply_causal_mask(scores):
    num_tokens = scores.shape[-1]
    mask = causal_mask(num_tokens, device=scores.device)  # [T, T], broadcasts over the batch dims
    return scores.masked_fill(mask, float("-inf"))
