"""compute_rope_params: counts the frequencies 0, 1, 2, ... over head_dim, an exponent i/hd instead of 2i/hd."""
import torch


def compute_rope_params(head_dim, theta_base=10_000, context_length=4096, dtype=torch.float32):
    if head_dim % 2:
        raise ValueError("head_dim must be even")
    inv_freq = 1.0 / theta_base ** (torch.arange(head_dim // 2, dtype=dtype) / head_dim)  # [hd/2]
    positions = torch.arange(context_length, dtype=dtype)
    angles = positions[:, None] * inv_freq[None, :]  # [L, hd/2]
    angles = torch.cat([angles, angles], dim=-1)
    return torch.cos(angles), torch.sin(angles)
