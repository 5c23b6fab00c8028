"""padding_mask: Final correct version (helpers included)."""
import torch
from torch import nn


def padding_mask(lengths, max_len):
    """Boolean [B, max_len] mask, True at positions >= lengths[b] (the padding is hidden).

    lengths: integer [B]  ->  bool [B, max_len], on the device of ``lengths``.
    Lesson section 4, "Padding".
    """
    positions = torch.arange(max_len, device=lengths.device)
    return positions[None, :] >= lengths[:, None]
