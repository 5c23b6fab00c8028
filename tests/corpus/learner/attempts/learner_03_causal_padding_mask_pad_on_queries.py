"""causal_padding_mask: put the padding mask along the queries ([B, T, 1]) instead of the keys ([B, 1, T])"""
import torch


def causal_padding_mask(lengths, num_tokens):
    causal = causal_mask(num_tokens, device=lengths.device)
    pad = padding_mask(lengths, num_tokens)
    return causal[None, :, :] | pad[:, :, None]
