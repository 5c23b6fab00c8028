import torch
from torch import nn


def compute_rope_params(head_dim, theta_base=10_000, context_length=4096, dtype=torch.float32):
    """MISTAKE (common slip): returns torch.stack([cos, sin]) (one [2, L, hd] tensor) instead of the
    tuple (cos, sin)."""
    if head_dim % 2 != 0:
        raise ValueError("head_dim must be even")
    inv_freq = 1.0 / (theta_base ** (torch.arange(0, head_dim, 2, dtype=dtype) / head_dim))
    positions = torch.arange(context_length, dtype=dtype)
    angles = positions[:, None] * inv_freq[None, :]
    angles = torch.cat([angles, angles], dim=-1)
    return torch.stack([torch.cos(angles), torch.sin(angles)])
