"""compute_rope_params: angles computed in float64 for accuracy, but the float64 tables are returned as they are."""
import torch


def compute_rope_params(head_dim, theta_base=10_000, context_length=4096):
    if head_dim % 2 != 0:
        raise ValueError("head_dim must be even")
    inv_freq = 1.0 / (theta_base ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))
    positions = torch.arange(context_length, dtype=torch.float64)
    angles = torch.outer(positions, inv_freq)
    angles = torch.cat([angles, angles], dim=-1)
    return torch.cos(angles), torch.sin(angles)
