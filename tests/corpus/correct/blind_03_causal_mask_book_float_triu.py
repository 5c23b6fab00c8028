"""causal_mask: The book's float triu of ones with diagonal=1, converted with .bool() (written blind, from the contract alone)."""
import torch


def causal_mask(num_tokens, device=None):
    # the book's way: a float upper triangle of ones, converted to bool
    return torch.triu(torch.ones(num_tokens, num_tokens, device=device), diagonal=1).bool()
