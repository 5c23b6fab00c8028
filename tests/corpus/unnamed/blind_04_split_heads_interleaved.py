"""split_heads: Reshapes to [B, T, hd, H] and permutes, so head h takes every H-th feature (h, h+H, ...) instead of a contiguous block. (written blind, from the contract alone). The blind author filed it as unnamed."""
import torch


def split_heads(x, num_heads):
    b, num_tokens, d = x.shape
    if num_heads <= 0 or d % num_heads != 0:
        raise ValueError(f"D={d} is not divisible by num_heads={num_heads}")
    head_dim = d // num_heads
    x = x.reshape(b, num_tokens, head_dim, num_heads)
    return x.permute(0, 3, 1, 2)
