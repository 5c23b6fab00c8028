"""causal_padding_mask: causal [1, T, T] | padding [B, 1, T]"""
import torch


def causal_padding_mask(lengths, num_tokens):
    causal = causal_mask(num_tokens, device=lengths.device)
    pad = padding_mask(lengths, num_tokens)
    return causal[None, :, :] | pad[:, None, :]
