import torch
from torch import nn


def repeat_kv(x, group_size):
    """MISTAKE: uses x.repeat(1, group_size, 1, 1), which tiles [K1, K2, K1, K2] instead of
    repeat_interleave's [K1, K1, K2, K2]."""
    return x.repeat(1, group_size, 1, 1)
