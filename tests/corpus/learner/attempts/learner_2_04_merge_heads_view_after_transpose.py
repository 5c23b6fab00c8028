"""merge_heads: (deliberate) transpose(1, 2) then .view(...): view fails on the non-contiguous transposed tensor."""
import torch


def merge_heads(x):
    B, H, T, hd = x.shape
    return x.transpose(1, 2).view(B, T, H * hd)
