"""merge_heads: Views [B, H, T, hd] straight as [B, T, H*hd] without moving the head axis back behind the tokens. (written blind, from the contract alone)."""
import torch


def merge_heads(x):
    b, num_heads, num_tokens, head_dim = x.shape
    return x.contiguous().view(b, num_tokens, num_heads * head_dim)
