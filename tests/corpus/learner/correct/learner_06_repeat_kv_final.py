"""repeat_kv: repeat_interleave along the group axis"""
import torch


def repeat_kv(x, group_size):
    return x.repeat_interleave(group_size, dim=1)
