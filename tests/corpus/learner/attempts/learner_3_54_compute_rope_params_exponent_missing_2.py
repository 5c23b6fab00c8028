"""compute_rope_params: used arange(head_dim // 2) / head_dim as the exponent (i/hd instead of 2i/hd), so the frequencies decay too slowly."""
import torch


def compute_rope_params(head_dim, theta_base=10_000, context_length=4096, dtype=torch.float32):
    if head_dim % 2 != 0:
        raise ValueError("head_dim must be even")
    inv_freq = 1.0 / (theta_base ** (torch.arange(head_dim // 2, dtype=dtype) / head_dim))
    positions = torch.arange(context_length, dtype=dtype)
    angles = positions[:, None] * inv_freq[None, :]
    angles = torch.cat([angles, angles], dim=1)
    return torch.cos(angles), torch.sin(angles)
