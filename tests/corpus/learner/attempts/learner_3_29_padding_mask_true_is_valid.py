"""padding_mask: built a "valid positions" mask (True for real tokens, positions < length) instead of True = hidden padding."""
import torch


def padding_mask(lengths, max_len):
    positions = torch.arange(max_len, device=lengths.device)
    return positions[None, :] < lengths[:, None]
