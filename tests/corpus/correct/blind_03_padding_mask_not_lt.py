"""padding_mask: Logical not of the 'real token' mask positions < lengths.unsqueeze(-1) (written blind, from the contract alone)."""
import torch


def padding_mask(lengths, max_len):
    positions = torch.arange(max_len, device=lengths.device)
    is_token = positions < lengths.unsqueeze(-1)  # True on real tokens
    return ~is_token
