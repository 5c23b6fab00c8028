"""split_qkv: Assumes the per-head interleaved layout reshape(B, T, H, 3, hd) instead of the contract's (B, T, 3, H, hd). (written blind, from the contract alone). The blind author filed it as unnamed."""
import torch


def split_qkv(qkv, num_heads):
    B, T, C3 = qkv.shape
    if num_heads <= 0 or C3 % (3 * num_heads) != 0:
        raise ValueError(f"last dim {C3} is not 3 x a multiple of num_heads={num_heads}")
    head_dim = C3 // (3 * num_heads)
    # Megatron-style layout: each head holds its own q, k and v
    qkv = qkv.reshape(B, T, num_heads, 3, head_dim).permute(3, 0, 2, 1, 4)
    q, k, v = qkv[0], qkv[1], qkv[2]
    return q, k, v
