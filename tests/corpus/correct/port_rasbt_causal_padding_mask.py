"""causal_padding_mask: port of rasbt/LLMs-from-scratch ch03/01_main-chapter-code/ch03.ipynb masking, extended to padding (the causal mask OR the padding mask over the keys; both beside it)"""
import torch


def causal_mask(num_tokens, device=None):
    return torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool, device=device), diagonal=1)


def padding_mask(lengths, max_len):
    return torch.arange(max_len, device=lengths.device)[None, :] >= lengths[:, None]


def causal_padding_mask(lengths, num_tokens):
    return causal_mask(num_tokens, lengths.device)[None] | padding_mask(lengths, num_tokens)[:, None, :]
