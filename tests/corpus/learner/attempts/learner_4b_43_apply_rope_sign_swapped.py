import torch
from torch import nn


def apply_rope(x, cos, sin, offset=0):
    """MISTAKE: builds the rotated-half as cat(x2, -x1) instead of cat(-x2, x1): the minus sign on the
    wrong half, i.e. rotating by -angle."""
    T, hd = x.shape[-2], x.shape[-1]
    c = cos[offset:offset + T, :].to(x.device)
    s = sin[offset:offset + T, :].to(x.device)
    x1, x2 = x[..., : hd // 2], x[..., hd // 2:]
    rotated = torch.cat([x2, -x1], dim=-1)
    return (x * c + rotated * s).to(x.dtype)
