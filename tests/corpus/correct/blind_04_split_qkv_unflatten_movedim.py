"""split_qkv: unflatten(-1, (3, H, hd)), movedim(1, 3) to put tokens after heads, then unbind the q/k/v axis. (written blind, from the contract alone)."""
import torch


def split_qkv(qkv: torch.Tensor, num_heads: int):
    """unflatten the last dim into (3, H, hd), move the head axis before the
    token axis with movedim, and unbind the q/k/v axis."""
    width = qkv.shape[-1]
    if num_heads < 1 or width % (3 * num_heads):
        raise ValueError(f"{width} is not 3 * a multiple of {num_heads}")
    head_dim = width // (3 * num_heads)
    t = qkv.unflatten(-1, (3, num_heads, head_dim))   # [B, T, 3, H, hd]
    t = t.movedim(1, 3)                                # [B, 3, H, T, hd]
    q, k, v = t.unbind(dim=1)
    return q, k, v
