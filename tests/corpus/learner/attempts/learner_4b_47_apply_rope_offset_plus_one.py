import torch
from torch import nn


def apply_rope(x, cos, sin, offset=0):
    """MISTAKE: cache position off by one: uses table rows offset+1 ... offset+T (positions counted
    from 1)."""
    T, hd = x.shape[-2], x.shape[-1]
    c = cos[offset + 1:offset + T + 1, :].to(x.device)
    s = sin[offset + 1:offset + T + 1, :].to(x.device)
    x1, x2 = x[..., : hd // 2], x[..., hd // 2:]
    rotated = torch.cat([-x2, x1], dim=-1)
    return (x * c + rotated * s).to(x.dtype)
