"""apply_rope: rotates the pairs (x[2i], x[2i+1]) by every other column of the tables."""
import torch


def apply_rope(x, cos, sin, offset=0):
    num_tokens = x.shape[-2]
    c = cos[offset:offset + num_tokens, ::2].to(x.device)  # [T, hd/2]
    s = sin[offset:offset + num_tokens, ::2].to(x.device)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    out = torch.stack((x1 * c - x2 * s, x1 * s + x2 * c), dim=-1)
    return out.flatten(-2).to(x.dtype)
