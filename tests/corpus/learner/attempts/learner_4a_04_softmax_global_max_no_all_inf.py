"""Attempt 04 at softmax.

MISTAKE: Subtracts the global maximum x.max() of the whole tensor instead of each slice's maximum along dim (x.amax(dim, keepdim=True)), so slices far below the global max underflow to 0/0 = NaN; also no handling of all -inf slices (they give NaN instead of zeros).
"""
import torch


def softmax(x, dim=-1):
    """MISTAKE: Subtracts the global maximum x.max() of the whole tensor instead of each slice's maximum along dim (x.amax(dim, keepdim=True)), so slices far below the global max underflow to 0/0 = NaN; also no handling of all -inf slices (they give NaN instead of zeros)."""
    x = x - x.max()
    e = torch.exp(x)
    return e / e.sum(dim=dim, keepdim=True)
