"""apply_rope: took rows 0..T-1 of the tables (cos[:T]) and ignored the offset."""
import torch


def apply_rope(x, cos, sin, offset=0):
    T, hd = x.shape[-2], x.shape[-1]
    x1 = x[..., : hd // 2]
    x2 = x[..., hd // 2:]
    c = cos[:T, :].to(x.device)
    s = sin[:T, :].to(x.device)
    rotated = torch.cat((-x2, x1), dim=-1)
    return (x * c + rotated * s).to(x.dtype)
