"""padding_mask: positions >= lengths[:, None]"""
import torch


def padding_mask(lengths, max_len):
    positions = torch.arange(max_len, device=lengths.device)
    return positions[None, :] >= lengths[:, None]
