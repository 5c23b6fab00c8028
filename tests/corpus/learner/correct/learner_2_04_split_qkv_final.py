"""split_qkv: Final correct version."""
import torch
from torch import nn


def split_qkv(qkv, num_heads):
    """Split a fused projection into per-head queries, keys and values.

    qkv: [B, T, 3D] laid out as reshape(B, T, 3, H, D/H).permute(2, 0, 3, 1, 4)
    ->  (q, k, v), each [B, H, T, D/H]. Raise ValueError if 3D is not 3 * a multiple of num_heads.
    Lesson section 5, "Fused QKV".
    """
    B, T, D3 = qkv.shape
    if D3 % (3 * num_heads) != 0:
        raise ValueError(f"{D3} is not 3 * a multiple of num_heads = {num_heads}")
    hd = D3 // (3 * num_heads)
    q, k, v = qkv.reshape(B, T, 3, num_heads, hd).permute(2, 0, 3, 1, 4)
    return q, k, v
