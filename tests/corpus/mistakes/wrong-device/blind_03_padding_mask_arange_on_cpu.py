"""padding_mask: Builds arange on the default (CPU) device and moves lengths to CPU, so a CUDA lengths tensor gets a CPU mask (right values; only visible on a GPU run) (written blind, from the contract alone)."""
import torch


def padding_mask(lengths, max_len):
    positions = torch.arange(max_len)
    return positions[None, :] >= lengths[:, None].cpu()
