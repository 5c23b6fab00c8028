"""apply_causal_mask: used masked_fill_ (in place) and returned scores, which overwrites the caller's scores"""
import torch


def apply_causal_mask(scores):
    T = scores.shape[-1]
    return scores.masked_fill_(causal_mask(T, device=scores.device), float("-inf"))
