"""split_qkv: timm style: reshape(B, T, 3, H, hd).permute(2, 0, 3, 1, 4) and index [0], [1], [2]. (written blind, from the contract alone)."""
import torch


def split_qkv(qkv, num_heads):
    """timm / FusedQKVAttention style: one reshape to [B, T, 3, H, hd], one permute
    to [3, B, H, T, hd], then take the three slices."""
    B, T, C3 = qkv.shape
    if num_heads <= 0 or C3 % (3 * num_heads) != 0:
        raise ValueError(f"last dim {C3} is not 3 x a multiple of num_heads={num_heads}")
    head_dim = C3 // (3 * num_heads)
    qkv = qkv.reshape(B, T, 3, num_heads, head_dim).permute(2, 0, 3, 1, 4)
    q, k, v = qkv[0], qkv[1], qkv[2]
    return q, k, v
