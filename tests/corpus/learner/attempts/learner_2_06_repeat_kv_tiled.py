"""repeat_kv: (deliberate) Used repeat (tiles [K1, K2, K1, K2]) instead of repeat_interleave."""
import torch
from torch import nn


def repeat_kv(x, group_size):
    """Repeat each key/value group ``group_size`` times in a row, one copy per query head it serves:
    [K1, K2] becomes [K1, K1, K2, K2] (query head h uses group h // group_size).

    x: [B, G, T, hd]  ->  [B, G*group_size, T, hd]. Lesson section 3, "Grouped-query attention".
    """
    return x.repeat(1, group_size, 1, 1)
