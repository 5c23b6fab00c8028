import torch
from torch import nn


def repeat_kv(x, group_size):
    """MISTAKE: repeat_interleave along dim=2 (the token axis) instead of dim=1 (the group axis)."""
    return x.repeat_interleave(group_size, dim=2)
