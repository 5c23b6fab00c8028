"""causal_mask: port of rasbt/LLMs-from-scratch ch03/01_main-chapter-code/ch03.ipynb masking section (torch.triu of ones, diagonal=1, as a boolean mask)"""
import torch


def causal_mask(num_tokens, device=None):
    return torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool, device=device), diagonal=1)
