"""split_qkv: After chunking into thirds, reshapes each [B, T, D] straight to [B, H, T, hd] with no transpose. (written blind, from the contract alone)."""
import torch


def split_qkv(qkv, num_heads):
    b, num_tokens, three_d = qkv.shape
    if num_heads <= 0 or three_d % (3 * num_heads) != 0:
        raise ValueError("qkv width must be 3 * a multiple of num_heads")
    head_dim = three_d // (3 * num_heads)
    q, k, v = qkv.chunk(3, dim=-1)
    q = q.reshape(b, num_heads, num_tokens, head_dim)
    k = k.reshape(b, num_heads, num_tokens, head_dim)
    v = v.reshape(b, num_heads, num_tokens, head_dim)
    return q, k, v
