import torch


def split_qkv(qkv, num_heads):
    """MISTAKE: wrong fused layout: reshapes the last axis as (H, 3, hd) instead of (3, H, hd),
    i.e. assumes each head's q, k, v sit together, then permute(2, 0, 1, 3, 4)."""
    B, T, D3 = qkv.shape
    if D3 % (3 * num_heads) != 0:
        raise ValueError("3D must be 3 * a multiple of num_heads")
    hd = D3 // (3 * num_heads)
    parts = qkv.reshape(B, T, num_heads, 3, hd).permute(3, 0, 2, 1, 4)
    return parts[0], parts[1], parts[2]
