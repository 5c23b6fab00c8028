import torch
from torch import nn


def compute_rope_params(head_dim, theta_base=10_000, context_length=4096, dtype=torch.float32):
    """MISTAKE: forgets the ValueError for an odd head_dim (returns tables of the wrong width instead)."""
    inv_freq = 1.0 / (theta_base ** (torch.arange(0, head_dim, 2, dtype=dtype) / head_dim))
    positions = torch.arange(context_length, dtype=dtype)
    angles = positions[:, None] * inv_freq[None, :]
    angles = torch.cat([angles, angles], dim=-1)
    return torch.cos(angles), torch.sin(angles)
