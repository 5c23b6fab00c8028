"""apply_causal_mask: took T = scores.shape[0], which is the batch size for batched scores"""
import torch


def apply_causal_mask(scores):
    T = scores.shape[0]
    return scores.masked_fill(causal_mask(T, device=scores.device), float("-inf"))
