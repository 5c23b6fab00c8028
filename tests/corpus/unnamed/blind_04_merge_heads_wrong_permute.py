"""merge_heads: Permutes to [B, T, hd, H] instead of [B, T, H, hd], so the heads come out interleaved feature by feature. (written blind, from the contract alone). The blind author filed it as unnamed."""
import torch


def merge_heads(x):
    b, num_heads, num_tokens, head_dim = x.shape
    return x.permute(0, 2, 3, 1).reshape(b, num_tokens, num_heads * head_dim)
