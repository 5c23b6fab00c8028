import torch


def split_heads(x, num_heads):
    """MISTAKE (common slip): reshapes to [B, T, H, hd] but forgets the transpose(1, 2), returning the
    wrong axis order."""
    B, T, D = x.shape
    if D % num_heads != 0:
        raise ValueError(f"D={D} is not divisible by num_heads={num_heads}")
    return x.reshape(B, T, num_heads, D // num_heads)
