"""split_qkv: reshaped to (B, T, H, 3, hd) instead of (B, T, 3, H, hd), i.e. the wrong layout of the fused projection."""


def split_qkv(qkv, num_heads):
    B, T, D3 = qkv.shape
    if D3 % (3 * num_heads) != 0:
        raise ValueError("3D must be 3 * a multiple of num_heads")
    parts = qkv.reshape(B, T, num_heads, 3, D3 // (3 * num_heads)).permute(3, 0, 2, 1, 4)
    return parts[0], parts[1], parts[2]
