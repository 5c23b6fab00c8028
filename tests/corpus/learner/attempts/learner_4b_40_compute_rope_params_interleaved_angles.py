import torch
from torch import nn


def compute_rope_params(head_dim, theta_base=10_000, context_length=4096, dtype=torch.float32):
    """MISTAKE: RoPE pairing: repeats each angle twice in a row (repeat_interleave(2), the neighbouring
    (2i, 2i+1) layout of the paper) instead of concatenating the [L, hd/2] angles with themselves."""
    if head_dim % 2 != 0:
        raise ValueError("head_dim must be even")
    inv_freq = 1.0 / (theta_base ** (torch.arange(0, head_dim, 2, dtype=dtype) / head_dim))
    positions = torch.arange(context_length, dtype=dtype)
    angles = positions[:, None] * inv_freq[None, :]
    angles = angles.repeat_interleave(2, dim=-1)
    return torch.cos(angles), torch.sin(angles)
