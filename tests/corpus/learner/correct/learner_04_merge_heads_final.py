"""merge_heads: transpose(1, 2) then reshape(B, T, H*hd)"""
import torch


def merge_heads(x):
    B, H, T, hd = x.shape
    return x.transpose(1, 2).reshape(B, T, H * hd)
