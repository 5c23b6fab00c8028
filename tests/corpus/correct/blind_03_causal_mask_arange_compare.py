"""causal_mask: Broadcast comparison of arange positions: key index > query index (written blind, from the contract alone)."""
import torch


def causal_mask(num_tokens, device=None):
    positions = torch.arange(num_tokens, device=device)
    # row i = query, column j = key; hidden where the key lies in the future (j > i)
    return positions.unsqueeze(0) > positions.unsqueeze(1)
