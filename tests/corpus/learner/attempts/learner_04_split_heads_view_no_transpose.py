"""split_heads: went straight to x.view(B, H, T, hd) without the transpose"""
import torch


def split_heads(x, num_heads):
    B, T, D = x.shape
    if D % num_heads != 0:
        raise ValueError(f"D={D} is not divisible by num_heads={num_heads}")
    return x.view(B, num_heads, T, D // num_heads)
