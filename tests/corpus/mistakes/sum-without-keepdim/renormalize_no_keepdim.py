"""renormalize_causal_weights: row sums taken without keepdim=True, so the division broadcasts across columns instead of rows."""
import torch


def renormalize_causal_weights(weights):
    mask = causal_mask(weights.shape[-1], device=weights.device)
    w = weights.masked_fill(mask, 0.0)
    return w / w.sum(dim=-1)
