"""Attempt 48 at apply_causal_mask (common slip).

MISTAKE: (common slip) The future scores are filled with 0 instead of -inf, so after a softmax they still get weight exp(0) > 0.
"""
import torch


def apply_causal_mask(scores):
    """MISTAKE: (common slip) masked_fill(mask, 0.0) instead of -inf."""
    mask = causal_mask(scores.shape[-1], device=scores.device)
    return scores.masked_fill(mask, 0.0)
