"""compute_rope_params: builds the tables one position at a time in a Python loop."""
import torch


def compute_rope_params(head_dim, theta_base=10_000, context_length=4096):
    if head_dim % 2 != 0:
        raise ValueError("head_dim must be even")
    inv_freq = 1.0 / (theta_base ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
    cos_rows, sin_rows = [], []
    for pos in range(context_length):
        ang = pos * inv_freq
        ang = torch.cat([ang, ang])
        cos_rows.append(torch.cos(ang))
        sin_rows.append(torch.sin(ang))
    return torch.stack(cos_rows), torch.stack(sin_rows)
