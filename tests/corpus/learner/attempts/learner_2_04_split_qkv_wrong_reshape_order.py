"""split_qkv: (deliberate) reshape(B, T, H, 3, hd).permute(3, 0, 2, 1, 4): assumes q/k/v interleaved per head instead of [q | k | v] blocks."""
import torch


def split_qkv(qkv, num_heads):
    B, T, D3 = qkv.shape
    if D3 % (3 * num_heads) != 0:
        raise ValueError("bad size")
    hd = D3 // (3 * num_heads)
    q, k, v = qkv.reshape(B, T, num_heads, 3, hd).permute(3, 0, 2, 1, 4)
    return q, k, v
