"""apply_causal_mask: adds a matrix of -inf above the diagonal and 0 elsewhere."""
import torch


def apply_causal_mask(scores):
    T = scores.shape[-1]
    penalty = torch.full((T, T), float("-inf"), dtype=scores.dtype, device=scores.device).triu(1)
    return scores + penalty
