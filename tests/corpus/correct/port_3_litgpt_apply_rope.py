"""apply_rope ported from Lightning-AI/litgpt litgpt/model.py apply_rope.

Source: https://github.com/Lightning-AI/litgpt/blob/26857050fe3ff627cd714fe92f5838f51a3d5efa/litgpt/model.py#L1144
Kept: x1/x2 halves, rotated = cat((-x2, x1)), cos/sin viewed with a batch dim and broadcast over heads,
roped = x * cos + rotated * sin, returned .to(dtype=x.dtype).
Adapted: the course's (cos, sin, offset) tables are [L, hd]: sliced at offset ... offset+T and given litgpt's
leading batch dimension (litgpt slices cos[input_pos] in GPT.forward and passes (1, T, hd)).
"""
import torch


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, offset=0) -> torch.Tensor:
    T = x.size(-2)
    cos = cos[offset:offset + T].unsqueeze(0).to(x.device)
    sin = sin[offset:offset + T].unsqueeze(0).to(x.device)
    if cos.dim() != 3:
        raise ValueError(f"cos must be three-dimensional, but shape is {cos.shape}")
    if cos.shape != sin.shape:
        raise ValueError(f"cos, sin must have same shape, but cos.shape={cos.shape}, sin.shape={sin.shape}")
    head_size_half = x.size(-1) // 2
    x1 = x[..., :head_size_half]  # (B, ..., T, head_size/2)
    x2 = x[..., head_size_half:]  # (B, ..., T, head_size/2)
    rotated = torch.cat((-x2, x1), dim=-1)  # (B, ..., T, head_size)
    dims_diff = x.dim() - cos.dim()
    if dims_diff > 0:
        # Ensure that shapes of `x`, `cos`, `sin` align
        new_shape = cos.shape[0:1] + (1,) * dims_diff + cos.shape[1:]
        cos = cos.view(*new_shape)
        sin = sin.view(*new_shape)

    roped = (x * cos) + (rotated * sin)
    return roped.to(dtype=x.dtype)
