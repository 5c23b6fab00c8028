"""causal_mask: Final correct version (helpers included)."""
import torch
from torch import nn


def causal_mask(num_tokens, device=None):
    """Boolean [T, T] mask, True strictly above the diagonal: the future is hidden.

    Lesson section 1, "Hiding the future".
    """
    return torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool, device=device), diagonal=1)
