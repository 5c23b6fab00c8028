"""causal_padding_mask: broadcast the padding mask as [B, T, 1] (hiding padded queries' rows) instead of [B, 1, T] (hiding padded keys)."""
import torch


def causal_padding_mask(lengths, num_tokens):
    causal = causal_mask(num_tokens, device=lengths.device)
    pad = padding_mask(lengths, num_tokens)
    return causal[None, :, :] | pad[:, :, None]
