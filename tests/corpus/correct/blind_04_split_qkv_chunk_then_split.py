"""split_qkv: chunk(3, dim=-1) into Q, K, V thirds, then each reshaped to [B, T, H, hd] and transposed(1, 2) by a private helper. (written blind, from the contract alone)."""
import torch


def _to_heads(t, num_heads, head_dim):
    b, num_tokens, _ = t.shape
    return t.reshape(b, num_tokens, num_heads, head_dim).transpose(1, 2)


def split_qkv(qkv, num_heads):
    """Cut the fused projection into its Q, K and V thirds with chunk, then split
    each third into heads the way the book's MultiHeadAttention does."""
    b, num_tokens, three_d = qkv.shape
    if num_heads <= 0 or three_d % (3 * num_heads) != 0:
        raise ValueError("qkv width must be 3 * a multiple of num_heads")
    d = three_d // 3
    head_dim = d // num_heads
    q, k, v = qkv.chunk(3, dim=-1)
    return (_to_heads(q, num_heads, head_dim),
            _to_heads(k, num_heads, head_dim),
            _to_heads(v, num_heads, head_dim))
