"""apply_rope: rotates one position at a time in a Python loop over the sequence."""
import torch


def apply_rope(x, cos, sin, offset=0):
    T, hd = x.shape[-2], x.shape[-1]
    h = hd // 2
    out = []
    for t in range(T):
        xt = x[..., t, :]
        rotated = torch.cat((-xt[..., h:], xt[..., :h]), dim=-1)
        out.append(xt * cos[offset + t] + rotated * sin[offset + t])
    return torch.stack(out, dim=-2).to(x.dtype)
