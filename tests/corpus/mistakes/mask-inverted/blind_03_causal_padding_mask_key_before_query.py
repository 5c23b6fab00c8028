"""causal_padding_mask: Written from scratch with (j < i) for the causal part, hiding the past instead of the future; the padding part is right (written blind, from the contract alone)."""
import torch


def causal_padding_mask(lengths, num_tokens):
    pos = torch.arange(num_tokens, device=lengths.device)
    i = pos[None, :, None]  # query
    j = pos[None, None, :]  # key
    return (j < i) | (j >= lengths[:, None, None])
