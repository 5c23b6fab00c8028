import torch


def split_heads(x, num_heads):
    """MISTAKE: goes straight from [B, T, D] to [B, H, T, hd] with one x.view(B, H, T, hd) (the
    lesson's 'tempting shortcut'), which re-reads memory order and mixes tokens into heads; it also
    fails on non-contiguous input. Should reshape to [B, T, H, hd] then transpose(1, 2)."""
    B, T, D = x.shape
    if D % num_heads != 0:
        raise ValueError("D not divisible by num_heads")
    return x.view(B, num_heads, T, D // num_heads)
