"""causal_mask: triu of a boolean ones matrix with diagonal=1, on device"""
import torch


def causal_mask(num_tokens, device=None):
    return torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool, device=device), diagonal=1)
