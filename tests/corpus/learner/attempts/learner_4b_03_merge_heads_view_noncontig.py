import torch


def merge_heads(x):
    """MISTAKE: uses .view after transpose(1, 2); view cannot merge the H and hd axes of the
    non-contiguous transposed tensor, so it raises RuntimeError (should use reshape or .contiguous())."""
    B, H, T, hd = x.shape
    return x.transpose(1, 2).view(B, T, H * hd)
