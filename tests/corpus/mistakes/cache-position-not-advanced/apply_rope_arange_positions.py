"""apply_rope: indexes the tables with arange(T), the positions of a fresh sequence, not offset + arange(T)."""
import torch


def apply_rope(x, cos, sin, offset=0):
    positions = torch.arange(x.shape[-2], device=cos.device)  # 0 ... T-1
    cos, sin = cos[positions].to(x.device), sin[positions].to(x.device)
    x1, x2 = x.chunk(2, dim=-1)
    return (x * cos + torch.cat((-x2, x1), dim=-1) * sin).to(x.dtype)
