"""causal_padding_mask: combined the causal and padding masks with & instead of |"""
import torch


def causal_padding_mask(lengths, num_tokens):
    causal = causal_mask(num_tokens, device=lengths.device)
    pad = padding_mask(lengths, num_tokens)
    return causal[None, :, :] & pad[:, None, :]
