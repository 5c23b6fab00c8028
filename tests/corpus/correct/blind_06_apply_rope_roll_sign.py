"""apply_rope: rotate-half built with torch.roll by head_dim/2 and a [-1.., +1..] sign vector."""
import torch


def apply_rope(x, cos, sin, offset=0):
    T, hd = x.shape[-2], x.shape[-1]
    half = hd // 2
    sign = torch.cat([-torch.ones(half, dtype=x.dtype, device=x.device),
                      torch.ones(half, dtype=x.dtype, device=x.device)])
    rotated = torch.roll(x, shifts=half, dims=-1) * sign          # == cat(-x2, x1)
    positions = torch.arange(offset, offset + T, device=cos.device)
    c = cos.index_select(0, positions)
    s = sin.index_select(0, positions)
    y = x * c + rotated * s
    return y.to(x.dtype)
