"""merge_heads: Book style: transpose(1, 2).contiguous().view(B, T, H*hd). (written blind, from the contract alone)."""
import torch


def merge_heads(x):
    """Book style: transpose back to [B, T, H, hd], make it contiguous, then view."""
    b, num_heads, num_tokens, head_dim = x.shape
    x = x.transpose(1, 2).contiguous()
    return x.view(b, num_tokens, num_heads * head_dim)
