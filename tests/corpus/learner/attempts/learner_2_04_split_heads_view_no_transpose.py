"""split_heads: (deliberate) view(B, H, T, hd) straight from [B, T, D]: right shape, tokens mixed across heads."""
import torch


def split_heads(x, num_heads):
    B, T, D = x.shape
    if D % num_heads != 0:
        raise ValueError("D not divisible by num_heads")
    return x.view(B, num_heads, T, D // num_heads)
