"""causal_mask: returned a float 0/1 mask (torch.ones default dtype) instead of a boolean mask."""
import torch


def causal_mask(num_tokens, device=None):
    return torch.triu(torch.ones(num_tokens, num_tokens, device=device), diagonal=1)
