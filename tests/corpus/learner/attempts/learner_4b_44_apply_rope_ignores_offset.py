import torch
from torch import nn


def apply_rope(x, cos, sin, offset=0):
    """MISTAKE: cache position ignored: always takes the table rows 0..T-1, so a cached call's tokens
    are rotated as if they were at the start of the text."""
    T, hd = x.shape[-2], x.shape[-1]
    c = cos[:T, :].to(x.device)
    s = sin[:T, :].to(x.device)
    x1, x2 = x[..., : hd // 2], x[..., hd // 2:]
    rotated = torch.cat([-x2, x1], dim=-1)
    return (x * c + rotated * s).to(x.dtype)
