"""apply_rope: did not cast the result back to x.dtype, so a bfloat16/float16 input comes back as float32."""
import torch


def apply_rope(x, cos, sin, offset=0):
    T, hd = x.shape[-2], x.shape[-1]
    x1 = x[..., : hd // 2]
    x2 = x[..., hd // 2:]
    c = cos[offset:offset + T, :].to(x.device)
    s = sin[offset:offset + T, :].to(x.device)
    rotated = torch.cat((-x2, x1), dim=-1)
    return x * c + rotated * s
