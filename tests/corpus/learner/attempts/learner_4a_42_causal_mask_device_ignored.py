"""Attempt 42 at causal_mask.

MISTAKE: The device argument is ignored: the mask is always created on the default device (CPU) instead of on device, so causal_mask(T, device='cuda') returns a CPU tensor.
"""
import torch
from torch import nn


def causal_mask(num_tokens, device=None):
    """MISTAKE: The device argument is ignored: the mask is always created on the default device (CPU) instead of on device, so causal_mask(T, device='cuda') returns a CPU tensor."""
    return torch.ones(num_tokens, num_tokens, dtype=torch.bool).triu(diagonal=1)
