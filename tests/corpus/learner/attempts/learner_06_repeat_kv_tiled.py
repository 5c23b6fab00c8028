"""repeat_kv: used x.repeat(1, group_size, 1, 1), which tiles the groups [K1, K2, K1, K2]"""
import torch


def repeat_kv(x, group_size):
    return x.repeat(1, group_size, 1, 1)
