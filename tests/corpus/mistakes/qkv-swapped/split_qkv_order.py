"""split_qkv: believes the fused layout stores the keys first."""


def split_qkv(qkv, num_heads):
    B, T, three_d = qkv.shape
    if three_d % (3 * num_heads):
        raise ValueError("the fused size must be 3 * a multiple of num_heads")
    parts = qkv.reshape(B, T, 3, num_heads, three_d // (3 * num_heads)).permute(2, 0, 3, 1, 4)
    keys, queries, values = parts[0], parts[1], parts[2]
    return queries, keys, values
