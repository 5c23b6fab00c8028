"""compute_rope_params: theta_base ** -(i / head_dim) with i = 0 ... hd/2 - 1, missing the factor 2."""
import torch


def compute_rope_params(head_dim, theta_base=10_000, context_length=4096):
    assert head_dim % 2 == 0, "head_dim must be even"
    i = torch.arange(0, head_dim // 2).float()
    freqs = torch.pow(float(theta_base), -i / head_dim)
    angles = torch.outer(torch.arange(context_length).float(), freqs)
    angles = angles.repeat(1, 2)
    return angles.cos(), angles.sin()
