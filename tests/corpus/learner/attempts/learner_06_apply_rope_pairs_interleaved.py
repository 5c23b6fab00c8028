"""apply_rope: rotated neighbouring pairs (x[..., 0::2], x[..., 1::2]) like the RoPE paper instead of the two halves"""
import torch


def apply_rope(x, cos, sin, offset=0):
    B, H, T, hd = x.shape
    x1 = x[..., 0::2]
    x2 = x[..., 1::2]
    c = cos[offset:offset + T, :].to(x.device)
    s = sin[offset:offset + T, :].to(x.device)
    rotated = torch.cat((-x2, x1), dim=-1)
    out = x * c + rotated * s
    return out.to(dtype=x.dtype)
