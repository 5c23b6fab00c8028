"""causal_mask: ones above the diagonal, as floats."""
import torch


def causal_mask(num_tokens, device=None):
    return torch.triu(torch.ones(num_tokens, num_tokens, device=device), diagonal=1)
