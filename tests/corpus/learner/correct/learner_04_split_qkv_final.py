"""split_qkv: ValueError check, reshape(B, T, 3, H, hd).permute(2, 0, 3, 1, 4), unpack"""
import torch


def split_qkv(qkv, num_heads):
    B, T, D3 = qkv.shape
    if D3 % (3 * num_heads) != 0:
        raise ValueError(f"{D3} is not 3 times a multiple of num_heads={num_heads}")
    hd = D3 // (3 * num_heads)
    q, k, v = qkv.reshape(B, T, 3, num_heads, hd).permute(2, 0, 3, 1, 4)
    return q, k, v
