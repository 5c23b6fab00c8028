"""merge_heads: Uses the in-place transpose_, which leaves the caller's tensor transposed to [B, T, H, hd] (and raises for a leaf input that requires grad). (written blind, from the contract alone)."""
import torch


def merge_heads(x):
    b, num_heads, num_tokens, head_dim = x.shape
    x.transpose_(1, 2)
    return x.reshape(b, num_tokens, num_heads * head_dim)
