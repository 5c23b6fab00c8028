"""causal_padding_mask: causal_mask as [1, T, T] OR padding_mask as [B, 1, T], both on lengths.device (written blind, from the contract alone)."""
import torch


def causal_padding_mask(lengths, num_tokens):
    future = causal_mask(num_tokens, device=lengths.device)  # [T, T]
    padded_keys = padding_mask(lengths, num_tokens)  # [B, T]
    return future.unsqueeze(0) | padded_keys.unsqueeze(1)  # [B, T, T]
