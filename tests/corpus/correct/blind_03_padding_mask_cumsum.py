"""padding_mask: 1-based positions from a cumsum of ones compared with > against the lengths (written blind, from the contract alone)."""
import torch


def padding_mask(lengths, max_len):
    # 1-based positions 1..max_len; position p (0-based) is padding when p + 1 > length
    one_based = torch.ones(lengths.shape[0], max_len, dtype=torch.long, device=lengths.device).cumsum(dim=1)
    return one_based > lengths.long().reshape(-1, 1)
