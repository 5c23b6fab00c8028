"""renormalize_causal_weights: multiply by a float lower triangle, divide by the new row sums."""
import torch


def renormalize_causal_weights(weights):
    T = weights.size(-1)
    keep = torch.ones(T, T, dtype=weights.dtype, device=weights.device).tril()
    kept = weights * keep
    return kept / kept.sum(dim=-1, keepdim=True)
