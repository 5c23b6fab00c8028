"""apply_rope: returns the tables' dtype (float32 for float64 x with the float32 tables compute_rope_params makes)."""
import torch


def apply_rope(x, cos, sin, offset=0):
    num_tokens, half = x.shape[-2], x.shape[-1] // 2
    cos = cos[offset:offset + num_tokens].to(x.device)
    sin = sin[offset:offset + num_tokens].to(x.device)
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return (x * cos + rotated * sin).to(cos.dtype)
