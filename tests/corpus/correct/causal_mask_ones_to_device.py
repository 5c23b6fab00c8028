"""causal_mask: float ones, upper triangle, made boolean and moved to the device."""
import torch


def causal_mask(num_tokens, device=None):
    return torch.ones(num_tokens, num_tokens).triu(diagonal=1).bool().to(device)
