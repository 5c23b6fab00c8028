"""causal_padding_mask: Clones the expanded causal mask to [B, T, T] and ORs the expanded padding mask into it in place (written blind, from the contract alone)."""
import torch


def causal_padding_mask(lengths, num_tokens):
    B = lengths.shape[0]
    mask = causal_mask(num_tokens, device=lengths.device).expand(B, num_tokens, num_tokens).clone()
    pad = padding_mask(lengths, num_tokens)[:, None, :].expand(B, num_tokens, num_tokens)
    mask |= pad  # in place on our own fresh tensor
    return mask
