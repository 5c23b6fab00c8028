"""apply_rope: second try, rotated adjacent pairs (2i, 2i+1) the way the RoPE paper does, instead of the two halves"""
import torch


def apply_rope(x, cos, sin, offset=0):
    B, H, T, hd = x.shape
    c = cos[offset:offset + T, : hd // 2].to(x.device)
    s = sin[offset:offset + T, : hd // 2].to(x.device)
    x_even = x[..., 0::2]
    x_odd = x[..., 1::2]
    out_even = x_even * c - x_odd * s
    out_odd = x_odd * c + x_even * s
    out = torch.stack((out_even, out_odd), dim=-1).flatten(-2)
    return out.to(dtype=x.dtype)
