"""repeat_kv: used Tensor.repeat, which tiles [K1, K2, K1, K2] instead of repeating each group in a row [K1, K1, K2, K2]."""
import torch


def repeat_kv(x, group_size):
    return x.repeat(1, group_size, 1, 1)
