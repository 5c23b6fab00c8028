"""Attempt 30 at causal_mask.

MISTAKE: torch.triu(torch.ones(T, T), 1) is returned as a float32 0/1 tensor: the mask is not converted to bool (.bool() / dtype=torch.bool).
"""
import torch
from torch import nn


def causal_mask(num_tokens, device=None):
    """MISTAKE: torch.triu(torch.ones(T, T), 1) is returned as a float32 0/1 tensor: the mask is not converted to bool (.bool() / dtype=torch.bool)."""
    return torch.triu(torch.ones(num_tokens, num_tokens, device=device), diagonal=1)
