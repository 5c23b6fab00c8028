"""causal_mask: (deliberate) triu with diagonal=0: the diagonal is hidden too, a token cannot attend to itself."""
import torch


def causal_mask(num_tokens, device=None):
    return torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool, device=device))
