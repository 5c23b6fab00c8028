"""causal_mask: used torch.triu with diagonal=0, so the diagonal (a token seeing itself) is hidden too."""
import torch


def causal_mask(num_tokens, device=None):
    return torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool, device=device))
