"""apply_rope: Final correct version."""
import torch
from torch import nn


def apply_rope(x, cos, sin, offset=0):
    """Rotate each head's two halves by the angles of positions offset ... offset+T-1:
    x*cos + cat(-x2, x1)*sin, where x1, x2 are the first and second half of the features.

    x: [B, H, T, hd], cos and sin: [L, hd]  ->  [B, H, T, hd], in x's dtype.
    Lesson section 1, "Rotary positions".
    """
    T, hd = x.shape[-2], x.shape[-1]
    x1 = x[..., : hd // 2]
    x2 = x[..., hd // 2 :]
    c = cos[offset:offset + T].to(x.device)
    s = sin[offset:offset + T].to(x.device)
    rotated = torch.cat([-x2, x1], dim=-1)
    return (x * c + rotated * s).to(x.dtype)
