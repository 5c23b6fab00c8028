"""apply_rope: rotates each even feature with the odd one after it (x[..., ::2], x[..., 1::2]), GPT-J's rotate_every_two."""
import torch


def apply_rope(x, cos, sin, offset=0):
    num_tokens = x.shape[-2]
    cos = cos[offset:offset + num_tokens].to(x.device)
    sin = sin[offset:offset + num_tokens].to(x.device)
    x_even, x_odd = x[..., ::2], x[..., 1::2]
    rotated = torch.stack((-x_odd, x_even), dim=-1).flatten(-2)  # (-x1, x0, -x3, x2, ...)
    return (x * cos + rotated * sin).to(x.dtype)
