"""split_qkv: Unpacks the fused slices as k, q, v, so the query and key roles are exchanged. (written blind, from the contract alone)."""
import torch


def split_qkv(qkv, num_heads):
    B, T, C3 = qkv.shape
    if num_heads <= 0 or C3 % (3 * num_heads) != 0:
        raise ValueError(f"last dim {C3} is not 3 x a multiple of num_heads={num_heads}")
    head_dim = C3 // (3 * num_heads)
    qkv = qkv.reshape(B, T, 3, num_heads, head_dim).permute(2, 0, 3, 1, 4)
    k, q, v = qkv.unbind(0)
    return q, k, v
