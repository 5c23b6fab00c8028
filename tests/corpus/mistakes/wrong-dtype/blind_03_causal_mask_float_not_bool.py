"""causal_mask: The book's float triu of ones (diagonal=1) returned without .bool(): right pattern, float32 dtype (written blind, from the contract alone)."""
import torch


def causal_mask(num_tokens, device=None):
    return torch.triu(torch.ones(num_tokens, num_tokens, device=device), diagonal=1)
