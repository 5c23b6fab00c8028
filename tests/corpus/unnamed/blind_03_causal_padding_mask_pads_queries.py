"""causal_padding_mask: ORs the padding mask in as [B, T, 1], hiding every key from padded queries instead of hiding padded keys from every query (written blind, from the contract alone)."""
import torch


def causal_padding_mask(lengths, num_tokens):
    future = causal_mask(num_tokens, device=lengths.device)
    pad = padding_mask(lengths, num_tokens)
    return future[None, :, :] | pad[:, :, None]
