"""split_heads: Book style: reshape to [B, T, H, hd] then transpose(1, 2), with reshape so non-contiguous input works. (written blind, from the contract alone)."""
import torch


def split_heads(x, num_heads):
    """[B, T, D] -> [B, H, T, D/H], book style (reshape instead of view so that
    non-contiguous inputs work too)."""
    b, num_tokens, d = x.shape
    if num_heads <= 0 or d % num_heads != 0:
        raise ValueError(f"D={d} is not divisible by num_heads={num_heads}")
    head_dim = d // num_heads
    x = x.reshape(b, num_tokens, num_heads, head_dim)
    return x.transpose(1, 2)
