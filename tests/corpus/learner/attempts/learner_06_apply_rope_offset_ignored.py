"""apply_rope: took the first T rows of cos/sin and ignored the offset"""
import torch


def apply_rope(x, cos, sin, offset=0):
    B, H, T, hd = x.shape
    x1 = x[..., : hd // 2]
    x2 = x[..., hd // 2:]
    c = cos[:T, :].to(x.device)
    s = sin[:T, :].to(x.device)
    rotated = torch.cat((-x2, x1), dim=-1)
    out = x * c + rotated * s
    return out.to(dtype=x.dtype)
