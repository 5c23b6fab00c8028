"""padding_mask: positions broadcast against the lengths with expand."""
import torch


def padding_mask(lengths, max_len):
    positions = torch.arange(max_len, device=lengths.device).expand(lengths.shape[0], max_len)
    return positions >= lengths.unsqueeze(1)
