"""padding_mask: ones where the padding is, as integers."""
import torch


def padding_mask(lengths, max_len):
    positions = torch.arange(max_len, device=lengths.device).expand(len(lengths), max_len)
    return (positions >= lengths.unsqueeze(-1)).long()
