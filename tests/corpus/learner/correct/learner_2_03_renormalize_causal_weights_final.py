"""renormalize_causal_weights: Final correct version (helpers included)."""
import torch
from torch import nn


def causal_mask(num_tokens, device=None):
    """Boolean [T, T] mask, True strictly above the diagonal: the future is hidden.

    Lesson section 1, "Hiding the future".
    """
    return torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool, device=device), diagonal=1)


def renormalize_causal_weights(weights):
    """Zero the future of already-normalised weights, then rescale each row to sum to 1.

    weights: [..., T, T] (rows sum to 1)  ->  [..., T, T]. Same result as masking with -inf before
    the softmax; the lesson shows why.
    Lesson section 3, "Masking after the softmax".
    """
    T = weights.shape[-1]
    masked = weights.masked_fill(causal_mask(T, device=weights.device), 0.0)
    return masked / masked.sum(dim=-1, keepdim=True)
