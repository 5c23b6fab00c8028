import torch


def split_heads(x, num_heads):
    """MISTAKE: forgets the docstring's ValueError for D not divisible by num_heads: it just
    reshapes, so a bad D raises a RuntimeError from reshape instead of a ValueError."""
    B, T, D = x.shape
    return x.reshape(B, T, num_heads, D // num_heads).transpose(1, 2)
