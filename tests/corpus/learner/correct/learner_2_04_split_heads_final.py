"""split_heads: Final correct version."""
import torch
from torch import nn


def split_heads(x, num_heads):
    """Split the features into heads: head h takes features h*D/H ... (h+1)*D/H - 1.

    x: [B, T, D]  ->  [B, H, T, D/H]. Raise ValueError if D is not divisible by num_heads.
    Works for non-contiguous ``x`` too. Lesson section 2, "Splitting into heads".
    """
    B, T, D = x.shape
    if D % num_heads != 0:
        raise ValueError(f"D = {D} is not divisible by num_heads = {num_heads}")
    return x.reshape(B, T, num_heads, D // num_heads).transpose(1, 2)
