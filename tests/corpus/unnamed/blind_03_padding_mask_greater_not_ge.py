"""padding_mask: Off by one: uses > instead of >=, so the first padding position (index lengths[b]) stays visible (written blind, from the contract alone)."""
import torch


def padding_mask(lengths, max_len):
    positions = torch.arange(max_len, device=lengths.device)
    return positions[None, :] > lengths[:, None]
