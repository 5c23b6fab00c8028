"""split_heads: Reshapes [B, T, D] straight to [B, H, T, hd] without going through [B, T, H, hd] and transposing. (written blind, from the contract alone)."""
import torch


def split_heads(x, num_heads):
    b, num_tokens, d = x.shape
    if num_heads <= 0 or d % num_heads != 0:
        raise ValueError(f"D={d} is not divisible by num_heads={num_heads}")
    head_dim = d // num_heads
    # reshape straight to the target shape (no transpose)
    return x.reshape(b, num_heads, num_tokens, head_dim)
