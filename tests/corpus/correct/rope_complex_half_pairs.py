"""apply_rope: complex numbers over the half-split pairs, reading the first half of cos/sin only."""
import torch


def apply_rope(x, cos, sin, offset=0):
    t, half = x.shape[-2], x.shape[-1] // 2
    c = cos[offset:offset + t, :half].to(x.device)
    s = sin[offset:offset + t, :half].to(x.device)
    wide = torch.float64 if x.dtype == torch.float64 else torch.float32
    z = torch.complex(x[..., :half].to(wide), x[..., half:].to(wide))
    rot = torch.complex(c.to(wide), s.to(wide))
    r = z * rot
    return torch.cat([r.real, r.imag], dim=-1).to(x.dtype)
