"""apply_causal_mask: port of rasbt/LLMs-from-scratch ch03/01_main-chapter-code/ch03.ipynb masking section (masked_fill of the triu mask with -inf before the softmax; the mask beside it)"""
import torch


def causal_mask(num_tokens, device=None):
    return torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool, device=device), diagonal=1)


def apply_causal_mask(scores):
    T = scores.shape[-1]
    return scores.masked_fill(causal_mask(T, scores.device), float("-inf"))
