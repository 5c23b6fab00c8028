"""causal_mask: Uses triu with the default diagonal=0, so each token is also hidden from itself (written blind, from the contract alone)."""
import torch


def causal_mask(num_tokens, device=None):
    ones = torch.ones(num_tokens, num_tokens, dtype=torch.bool, device=device)
    return torch.triu(ones)
