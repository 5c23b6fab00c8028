"""split_qkv: qkv.permute moves the "3" axis first but leaves the heads after the tokens, giving [B, T, H, hd]
instead of [B, H, T, hd].

Source / fix: https://github.com/SHI-Labs/NATTEN/pull/145 "Fix unfused permute in docs/fna/fused-vs-unfused.md"
(qkv.permute(3, 0, 1, 2, 4, 5) for [B, H, W, 3, heads, head_dim] -> should be permute(3, 0, 4, 1, 2, 5)).
Port: the 1-d sequence version: reshape(B, T, 3, heads, head_dim) and the buggy permute(2, 0, 1, 3, 4).
"""


def split_qkv(qkv, num_heads):
    B, T, C3 = qkv.shape
    if C3 % (3 * num_heads):
        raise ValueError("qkv features must be 3 * a multiple of num_heads")
    head_dim = C3 // (3 * num_heads)
    # [B, T, 3, heads, head_dim] -> [3, B, heads, T, head_dim]
    qkv = qkv.reshape(B, T, 3, num_heads, head_dim).permute(2, 0, 1, 3, 4)
    q, k, v = qkv[0], qkv[1], qkv[2]
    return q, k, v
