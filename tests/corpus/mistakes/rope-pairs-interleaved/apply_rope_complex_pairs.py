"""apply_rope: rotates adjacent pairs (x[2i], x[2i+1]) as complex numbers, as Meta's Llama code does."""
import torch


def apply_rope(x, cos, sin, offset=0):
    num_tokens, head_dim = x.shape[-2], x.shape[-1]
    half = head_dim // 2
    cos = cos[offset:offset + num_tokens, :half].to(x.device)  # one angle per pair
    sin = sin[offset:offset + num_tokens, :half].to(x.device)
    pairs = torch.view_as_complex(x.reshape(*x.shape[:-1], half, 2).contiguous())  # [B, H, T, hd/2]
    rotation = torch.complex(cos, sin).to(pairs.dtype)  # e^(i * angle)
    rotated = torch.view_as_real(pairs * rotation).flatten(-2)  # [B, H, T, hd]
    return rotated.to(x.dtype)
