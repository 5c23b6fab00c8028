"""split_heads: One head at a time: slices each block of D/H features and stacks them with torch.stack(dim=1). (written blind, from the contract alone)."""
import torch


def split_heads(x, num_heads):
    """One head at a time: slice each head's block of features and stack the
    slices along a new head dimension."""
    B, T, D = x.shape
    if num_heads < 1 or D % num_heads != 0:
        raise ValueError(f"cannot split {D} features into {num_heads} heads")
    head_dim = D // num_heads
    heads = []
    for h in range(num_heads):
        heads.append(x[:, :, h * head_dim:(h + 1) * head_dim])
    return torch.stack(heads, dim=1)
