"""split_heads: reshape(B, T, H, hd) then transpose(1, 2), ValueError if D % H"""
import torch


def split_heads(x, num_heads):
    B, T, D = x.shape
    if D % num_heads != 0:
        raise ValueError(f"D={D} is not divisible by num_heads={num_heads}")
    return x.reshape(B, T, num_heads, D // num_heads).transpose(1, 2)
