import torch


def merge_heads(x):
    """MISTAKE: reshapes [B, H, T, hd] straight to [B, T, H*hd] without swapping H and T first,
    which mixes tokens (right shape, wrong content)."""
    B, H, T, hd = x.shape
    return x.reshape(B, T, H * hd)
