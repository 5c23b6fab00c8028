"""attention_weights: casts to float64, scales the queries before q @ k.mT, hand-written stable softmax with a 0/1 keep mask and a denominator clamped at the smallest float, casts back. (written blind, from the contract alone). Wrong: on a row whose keys are all hidden the backward pass divides by that tiny clamp, and an output gradient larger than about 4 overflows to NaN gradients there (the contract: zero, finite). Found by benchmarks/seed_stability.py: it lost points on about half the seeds, in scaled_dot_product_attention."""
import math

import torch


def attention_weights(queries, keys, mask=None):
    """Compute the weights in float64 with a hand-written stable masked softmax, then cast back."""
    out_dtype = torch.promote_types(queries.dtype, keys.dtype)
    q = queries.to(torch.float64) / math.sqrt(keys.shape[-1])  # scale the queries first
    k = keys.to(torch.float64)
    scores = q @ k.mT
    if mask is None:
        keep = torch.ones_like(scores)
    else:
        keep = (~mask.to(device=scores.device, dtype=torch.bool)).to(torch.float64)
        keep = keep.expand(torch.broadcast_shapes(keep.shape, scores.shape))
        scores = scores.expand(keep.shape)
    # max over the visible keys only (0 for an all-hidden row), detached: it cancels out
    row_max = torch.where(keep > 0, scores, torch.full_like(scores, -math.inf)).amax(dim=-1, keepdim=True)
    row_max = torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max)).detach()
    # exp of hidden positions is multiplied by 0; clamp keeps exp() from overflowing there
    e = torch.exp((scores - row_max).clamp(max=0.0)) * keep
    denom = e.sum(dim=-1, keepdim=True)
    weights = e / denom.clamp(min=torch.finfo(torch.float64).tiny)
    return weights.to(out_dtype)
