import torch
from torch import nn


def apply_rope(x, cos, sin, offset=0):
    """MISTAKE: RoPE pairing: pairs neighbouring features (x[..., 0::2], x[..., 1::2]) and interleaves
    the rotated result, instead of the two halves x1 = x[..., :hd/2], x2 = x[..., hd/2:]."""
    T, hd = x.shape[-2], x.shape[-1]
    c = cos[offset:offset + T, :].to(x.device)
    s = sin[offset:offset + T, :].to(x.device)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    rotated = torch.stack([-x2, x1], dim=-1).flatten(-2)
    return (x * c + rotated * s).to(x.dtype)
