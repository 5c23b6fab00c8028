"""compute_rope_params: Final correct version."""
import torch
from torch import nn


def compute_rope_params(head_dim, theta_base=10_000, context_length=4096, dtype=torch.float32):
    """The rotary angles' cosines and sines: angle(pos, i) = pos * theta_base^(-2i/head_dim) for
    i < head_dim/2, repeated over both halves of the head.

    -> (cos, sin), each [context_length, head_dim], float32. Raise ValueError for an odd head_dim.
    Lesson section 1, "Rotary positions".
    """
    if head_dim % 2 != 0:
        raise ValueError(f"head_dim must be even, got {head_dim}")
    inv_freq = 1.0 / (theta_base ** (torch.arange(0, head_dim, 2, dtype=dtype) / head_dim))
    positions = torch.arange(context_length, dtype=dtype)
    angles = positions[:, None] * inv_freq[None, :]
    angles = torch.cat([angles, angles], dim=-1)
    return torch.cos(angles), torch.sin(angles)
