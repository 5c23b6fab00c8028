"""Attempt 36 at causal_mask.

MISTAKE: Uses torch.tril(ones(bool)) (PyTorch's 'may attend' convention): True on and below the diagonal, so the mask is inverted (True must mean hidden = strictly above the diagonal).
"""
import torch
from torch import nn


def causal_mask(num_tokens, device=None):
    """MISTAKE: Uses torch.tril(ones(bool)) (PyTorch's 'may attend' convention): True on and below the diagonal, so the mask is inverted (True must mean hidden = strictly above the diagonal)."""
    return torch.tril(torch.ones(num_tokens, num_tokens, dtype=torch.bool, device=device))
