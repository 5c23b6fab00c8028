"""padding_mask: marks the real tokens."""
import torch


def padding_mask(lengths, max_len):
    return torch.arange(max_len, device=lengths.device).unsqueeze(0) < lengths.unsqueeze(1)
