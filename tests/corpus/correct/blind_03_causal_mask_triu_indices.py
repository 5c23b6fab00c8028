"""causal_mask: Zero bool matrix with True written at torch.triu_indices(offset=1) (written blind, from the contract alone)."""
import torch


def causal_mask(num_tokens, device=None):
    mask = torch.zeros(num_tokens, num_tokens, dtype=torch.bool, device=device)
    rows, cols = torch.triu_indices(num_tokens, num_tokens, offset=1, device=device)
    mask[rows, cols] = True
    return mask
