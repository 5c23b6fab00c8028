"""apply_causal_mask: masked_fill (not in place) with my causal_mask of the last dim"""
import torch


def apply_causal_mask(scores):
    T = scores.shape[-1]
    return scores.masked_fill(causal_mask(T, device=scores.device), float("-inf"))
