"""split_qkv: chunks the fused projection into thirds, then views each third straight as [B, H, T, hd]."""


def split_qkv(qkv, num_heads):
    B, T, three_d = qkv.shape
    if three_d % (3 * num_heads):
        raise ValueError("the fused size must be 3 * a multiple of num_heads")
    d = three_d // 3
    q, k, v = qkv.chunk(3, dim=-1)
    return tuple(part.reshape(B, num_heads, T, d // num_heads) for part in (q, k, v))
