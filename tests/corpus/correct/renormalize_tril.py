"""renormalize_causal_weights: keep the lower triangle with torch.tril, then divide by the row sums."""
import torch


def renormalize_causal_weights(weights):
    kept = torch.tril(weights)
    return kept / kept.sum(dim=-1, keepdim=True)
