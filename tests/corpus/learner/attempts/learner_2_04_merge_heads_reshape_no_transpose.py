"""merge_heads: (deliberate) reshape [B, H, T, hd] straight to [B, T, H*hd] without swapping H and T first."""
import torch


def merge_heads(x):
    B, H, T, hd = x.shape
    return x.reshape(B, T, H * hd)
