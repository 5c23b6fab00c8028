"""compute_rope_params: gives each adjacent pair of features one angle (repeat_interleave), not both halves."""
import torch


def compute_rope_params(head_dim, theta_base=10_000, context_length=4096, dtype=torch.float32):
    if head_dim % 2 != 0:
        raise ValueError("head_dim must be even")
    inv_freq = 1.0 / (theta_base ** (torch.arange(0, head_dim, 2, dtype=dtype) / head_dim))
    positions = torch.arange(context_length, dtype=dtype)
    angles = torch.outer(positions, inv_freq)  # [context_length, head_dim // 2]
    angles = angles.repeat_interleave(2, dim=-1)  # features 2i and 2i+1 rotate together
    return torch.cos(angles), torch.sin(angles)
