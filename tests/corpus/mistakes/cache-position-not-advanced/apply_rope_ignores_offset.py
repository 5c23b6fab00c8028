"""apply_rope: takes the first T rows of the tables whatever the offset, so cached tokens restart at position 0."""
import torch


def apply_rope(x, cos, sin, offset=0):
    num_tokens, half = x.shape[-2], x.shape[-1] // 2
    cos, sin = cos[:num_tokens].to(x.device), sin[:num_tokens].to(x.device)
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return (x * cos + rotated * sin).to(x.dtype)
