"""apply_rope: flattens batch and heads with .view(B * H, T, hd), which fails on transposed (non-contiguous) input."""
import torch


def apply_rope(x, cos, sin, offset=0):
    B, H, T, hd = x.shape
    flat = x.view(B * H, T, hd)
    x1, x2 = flat[..., : hd // 2], flat[..., hd // 2:]
    c = cos[offset:offset + T].unsqueeze(0)
    s = sin[offset:offset + T].unsqueeze(0)
    out = flat * c + torch.cat((-x2, x1), dim=-1) * s
    return out.view(B, H, T, hd).to(x.dtype)
