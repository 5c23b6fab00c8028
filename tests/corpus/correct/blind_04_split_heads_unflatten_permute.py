"""split_heads: Uses x.unflatten(-1, (H, hd)) followed by permute(0, 2, 1, 3). (written blind, from the contract alone)."""
import torch


def split_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """Split the last dimension into heads with unflatten and move the head axis
    in front of the token axis with permute."""
    d = x.shape[-1]
    if num_heads <= 0 or d % num_heads:
        raise ValueError("the model width must be a multiple of num_heads")
    return x.unflatten(-1, (num_heads, d // num_heads)).permute(0, 2, 1, 3)
