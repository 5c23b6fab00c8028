"""apply_rope: takes x1, x2 as the even and the odd features (x[..., ::2], x[..., 1::2]) but keeps the halves' formula x*cos + cat(-x2, x1)*sin."""
import torch


def apply_rope(x, cos, sin, offset=0):
    T = x.shape[2]
    cos = cos[offset:offset + T, :].to(x.device)  # [T, hd]
    sin = sin[offset:offset + T, :].to(x.device)
    x1, x2 = x[..., ::2], x[..., 1::2]  # [B, H, T, hd/2] each
    return (x * cos + torch.cat((-x2, x1), dim=-1) * sin).to(x.dtype)
