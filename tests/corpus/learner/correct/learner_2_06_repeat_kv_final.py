"""repeat_kv: Final correct version."""
import torch
from torch import nn


def repeat_kv(x, group_size):
    """Repeat each key/value group ``group_size`` times in a row, one copy per query head it serves:
    [K1, K2] becomes [K1, K1, K2, K2] (query head h uses group h // group_size).

    x: [B, G, T, hd]  ->  [B, G*group_size, T, hd]. Lesson section 3, "Grouped-query attention".
    """
    return x.repeat_interleave(group_size, dim=1)
