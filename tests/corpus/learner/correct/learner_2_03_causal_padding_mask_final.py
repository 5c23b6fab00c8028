"""causal_padding_mask: Final correct version (helpers included)."""
import torch
from torch import nn


def causal_mask(num_tokens, device=None):
    """Boolean [T, T] mask, True strictly above the diagonal: the future is hidden.

    Lesson section 1, "Hiding the future".
    """
    return torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool, device=device), diagonal=1)


def padding_mask(lengths, max_len):
    """Boolean [B, max_len] mask, True at positions >= lengths[b] (the padding is hidden).

    lengths: integer [B]  ->  bool [B, max_len], on the device of ``lengths``.
    Lesson section 4, "Padding".
    """
    positions = torch.arange(max_len, device=lengths.device)
    return positions[None, :] >= lengths[:, None]


def causal_padding_mask(lengths, num_tokens):
    """Boolean [B, T, T] mask, True where query i may not see key j: j > i or j >= lengths[b].

    Lesson section 4, "Padding".
    """
    causal = causal_mask(num_tokens, device=lengths.device)
    return causal[None, :, :] | padding_mask(lengths, num_tokens)[:, None, :]
