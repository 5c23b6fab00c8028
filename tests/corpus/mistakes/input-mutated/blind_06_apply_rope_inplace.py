"""apply_rope: computes the rotated halves first, then updates x in place with mul_/add_ and returns it."""
import torch


def apply_rope(x, cos, sin, offset=0):
    T, hd = x.shape[-2], x.shape[-1]
    x1 = x[..., : hd // 2]
    x2 = x[..., hd // 2:]
    rotated = torch.cat((-x2, x1), dim=-1)
    c = cos[offset:offset + T].to(x.dtype)
    s = sin[offset:offset + T].to(x.dtype)
    return x.mul_(c).add_(rotated * s)
