"""causal_mask: (deliberate) Used tril(diagonal=-1): hides the past instead of the future (inverted mask)."""
import torch


def causal_mask(num_tokens, device=None):
    return torch.tril(torch.ones(num_tokens, num_tokens, dtype=torch.bool, device=device), diagonal=-1)
