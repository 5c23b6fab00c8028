"""apply_causal_mask: Final correct version (helpers included)."""
import torch
from torch import nn


def causal_mask(num_tokens, device=None):
    """Boolean [T, T] mask, True strictly above the diagonal: the future is hidden.

    Lesson section 1, "Hiding the future".
    """
    return torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool, device=device), diagonal=1)


def apply_causal_mask(scores):
    """A new tensor equal to ``scores`` with the future set to -inf; ``scores`` itself is unchanged.

    scores: [..., T, T]  ->  [..., T, T]. After a softmax, the future then gets weight exactly 0.
    Lesson section 2, "Masking with -inf".
    """
    T = scores.shape[-1]
    return scores.masked_fill(causal_mask(T, device=scores.device), float("-inf"))
