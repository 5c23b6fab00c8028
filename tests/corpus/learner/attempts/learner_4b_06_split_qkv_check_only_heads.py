import torch


def split_qkv(qkv, num_heads):
    """MISTAKE: the divisibility check tests only D3 % num_heads (not D3 % (3*num_heads)), so a
    width that is a multiple of H but not of 3*H (e.g. 3D=8 with 2 heads) gets a RuntimeError from
    reshape instead of the ValueError the docstring asks for."""
    B, T, D3 = qkv.shape
    if D3 % num_heads != 0:
        raise ValueError("not divisible by num_heads")
    hd = D3 // (3 * num_heads)
    parts = qkv.reshape(B, T, 3, num_heads, hd).permute(2, 0, 3, 1, 4)
    return parts[0], parts[1], parts[2]
