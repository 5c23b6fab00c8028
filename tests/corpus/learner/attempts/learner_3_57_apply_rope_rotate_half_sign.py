"""apply_rope: rotate-half built as cat(x2, -x1) instead of cat(-x2, x1), i.e. rotating the wrong way."""
import torch


def apply_rope(x, cos, sin, offset=0):
    T, hd = x.shape[-2], x.shape[-1]
    x1 = x[..., : hd // 2]
    x2 = x[..., hd // 2:]
    c = cos[offset:offset + T, :].to(x.device)
    s = sin[offset:offset + T, :].to(x.device)
    rotated = torch.cat((x2, -x1), dim=-1)
    return (x * c + rotated * s).to(x.dtype)
