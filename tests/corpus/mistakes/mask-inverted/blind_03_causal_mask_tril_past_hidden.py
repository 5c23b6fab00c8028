"""causal_mask: Uses tril(diagonal=-1): hides the past strictly below the diagonal and shows the future (written blind, from the contract alone)."""
import torch


def causal_mask(num_tokens, device=None):
    ones = torch.ones(num_tokens, num_tokens, dtype=torch.bool, device=device)
    return torch.tril(ones, diagonal=-1)
