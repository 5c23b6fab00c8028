"""split_heads: Fills a torch.zeros output buffer created without dtype=x.dtype, so float64 input comes back as float32. (written blind, from the contract alone)."""
import torch


def split_heads(x, num_heads):
    B, T, D = x.shape
    if num_heads < 1 or D % num_heads != 0:
        raise ValueError(f"cannot split {D} features into {num_heads} heads")
    head_dim = D // num_heads
    out = torch.zeros(B, num_heads, T, head_dim, device=x.device)
    for h in range(num_heads):
        out[:, h] = x[:, :, h * head_dim:(h + 1) * head_dim]
    return out
