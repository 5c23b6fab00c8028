"""causal_mask: torch.triu with the default diagonal."""
import torch


def causal_mask(num_tokens, device=None):
    return torch.ones(num_tokens, num_tokens, dtype=torch.bool, device=device).triu()
