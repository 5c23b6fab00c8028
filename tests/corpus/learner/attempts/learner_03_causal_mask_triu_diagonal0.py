"""causal_mask: torch.triu without diagonal=1, so the diagonal is hidden too"""
import torch


def causal_mask(num_tokens, device=None):
    return torch.triu(torch.ones(num_tokens, num_tokens, device=device)).bool()
