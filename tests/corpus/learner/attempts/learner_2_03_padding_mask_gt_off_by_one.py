"""padding_mask: (deliberate) Used > instead of >=: the first padding position (j == length) stays visible."""
import torch


def padding_mask(lengths, max_len):
    positions = torch.arange(max_len, device=lengths.device)
    return positions[None, :] > lengths[:, None]
