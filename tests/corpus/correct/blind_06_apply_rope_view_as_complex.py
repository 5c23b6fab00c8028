"""apply_rope: halves stacked as (real, imag) pairs, torch.view_as_complex times complex tables, back with view_as_real."""
import torch


def apply_rope(x, cos, sin, offset=0):
    B, H, T, hd = x.shape
    h = hd // 2
    work = torch.float64 if x.dtype == torch.float64 else torch.float32
    pairs = torch.stack((x[..., :h], x[..., h:]), dim=-1).to(work).contiguous()   # [B, H, T, h, 2]
    xc = torch.view_as_complex(pairs)
    ang = torch.complex(cos[offset:offset + T, :h].to(work), sin[offset:offset + T, :h].to(work))
    out = torch.view_as_real(xc * ang)                                          # [B, H, T, h, 2]
    return torch.cat((out[..., 0], out[..., 1]), dim=-1).to(x.dtype)
