"""causal_padding_mask: both conditions from arange comparisons, broadcast over the batch."""
import torch


def causal_padding_mask(lengths, num_tokens):
    query = torch.arange(num_tokens, device=lengths.device).view(1, -1, 1)
    key = torch.arange(num_tokens, device=lengths.device).view(1, 1, -1)
    return (key > query) | (key >= lengths.view(-1, 1, 1))
