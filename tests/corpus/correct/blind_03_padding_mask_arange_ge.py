"""padding_mask: Broadcast arange(max_len) on lengths.device against lengths[:, None] with >= (written blind, from the contract alone)."""
import torch


def padding_mask(lengths, max_len):
    positions = torch.arange(max_len, device=lengths.device)  # [max_len]
    return positions[None, :] >= lengths[:, None]  # [B, max_len]
