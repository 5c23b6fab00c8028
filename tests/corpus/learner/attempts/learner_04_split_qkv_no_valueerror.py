"""split_qkv: did the reshape/permute but forgot the ValueError check (reshape raises RuntimeError instead)"""
import torch


def split_qkv(qkv, num_heads):
    B, T, D3 = qkv.shape
    hd = D3 // (3 * num_heads)
    q, k, v = qkv.reshape(B, T, 3, num_heads, hd).permute(2, 0, 3, 1, 4)
    return q, k, v
