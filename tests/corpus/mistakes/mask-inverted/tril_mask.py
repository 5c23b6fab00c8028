"""causal_mask: the lower triangle, which is what a token may see."""
import torch


def causal_mask(num_tokens, device=None):
    return torch.tril(torch.ones(num_tokens, num_tokens, device=device)).bool()
