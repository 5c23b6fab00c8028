"""Attempt 39 at padding_mask.

MISTAKE: torch.arange(max_len) is created on the default device (CPU), not on lengths.device as the docstring asks: fails (device mismatch) for CUDA lengths; invisible on a CPU-only machine.
"""
import torch
from torch import nn


def padding_mask(lengths, max_len):
    """MISTAKE: torch.arange(max_len) is created on the default device (CPU), not on lengths.device as the docstring asks: fails (device mismatch) for CUDA lengths; invisible on a CPU-only machine."""
    positions = torch.arange(max_len)
    return positions[None, :] >= lengths[:, None]
