import torch
from torch import nn


def apply_rope(x, cos, sin, offset=0):
    """MISTAKE: dtype: returns x * cos + rot * sin in the table's float32 for bfloat16/float16 inputs
    instead of casting back to x's dtype."""
    T, hd = x.shape[-2], x.shape[-1]
    c = cos[offset:offset + T, :].to(x.device)
    s = sin[offset:offset + T, :].to(x.device)
    x1, x2 = x[..., : hd // 2], x[..., hd // 2:]
    rotated = torch.cat([-x2, x1], dim=-1)
    return x * c + rotated * s
