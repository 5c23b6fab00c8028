"""causal_mask: used torch.tril, so the past and the diagonal are True (hidden) instead of the future"""
import torch


def causal_mask(num_tokens, device=None):
    return torch.tril(torch.ones(num_tokens, num_tokens, dtype=torch.bool, device=device))
