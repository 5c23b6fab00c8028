"""split_qkv: Copies each head into torch.zeros buffers created without dtype=qkv.dtype, so float64 input comes back as float32. (written blind, from the contract alone)."""
import torch


def split_qkv(qkv, num_heads):
    B, T, C3 = qkv.shape
    if num_heads <= 0 or C3 % (3 * num_heads) != 0:
        raise ValueError(f"last dim {C3} is not 3 x a multiple of num_heads={num_heads}")
    D = C3 // 3
    head_dim = D // num_heads
    outs = []
    for i in range(3):
        part = torch.zeros(B, num_heads, T, head_dim, device=qkv.device)
        for h in range(num_heads):
            start = i * D + h * head_dim
            part[:, h] = qkv[:, :, start:start + head_dim]
        outs.append(part)
    q, k, v = outs
    return q, k, v
