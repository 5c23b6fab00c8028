"""compute_rope_params: inverse frequencies as exp(-2i*ln(theta)/d), angles via einsum, both halves by repeat."""
import math
import torch


def compute_rope_params(head_dim, theta_base=10_000, context_length=4096):
    if head_dim % 2 == 1:
        raise ValueError("head_dim has to be even")
    two_i = torch.arange(0, head_dim, 2, dtype=torch.float32)
    inv_freq = torch.exp(two_i * (-math.log(theta_base) / head_dim))
    positions = torch.arange(context_length, dtype=torch.float32)
    angles = torch.einsum("p,f->pf", positions, inv_freq)
    angles = angles.repeat(1, 2)
    return torch.cos(angles), torch.sin(angles)
