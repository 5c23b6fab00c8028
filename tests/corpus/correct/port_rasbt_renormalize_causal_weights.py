"""renormalize_causal_weights: port of rasbt/LLMs-from-scratch ch03/01_main-chapter-code/ch03.ipynb masking section (weights above the diagonal zeroed, then each row divided by its sum; the mask beside it)"""
import torch


def causal_mask(num_tokens, device=None):
    return torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool, device=device), diagonal=1)


def renormalize_causal_weights(weights):
    T = weights.shape[-1]
    w = weights.masked_fill(causal_mask(T, weights.device), 0.0)
    return w / w.sum(dim=-1, keepdim=True)
