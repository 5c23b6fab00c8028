"""Attempt 33 at padding_mask.

MISTAKE: Compares positions > lengths instead of >=: position lengths[b] itself (the first padding position) is left visible (off by one).
"""
import torch
from torch import nn


def padding_mask(lengths, max_len):
    """MISTAKE: Compares positions > lengths instead of >=: position lengths[b] itself (the first padding position) is left visible (off by one)."""
    positions = torch.arange(max_len, device=lengths.device)
    return positions[None, :] > lengths[:, None]
