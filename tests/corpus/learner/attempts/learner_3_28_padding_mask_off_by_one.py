"""padding_mask: compared positions > lengths instead of >=, so the first padding position stays visible."""
import torch


def padding_mask(lengths, max_len):
    positions = torch.arange(max_len, device=lengths.device)
    return positions[None, :] > lengths[:, None]
