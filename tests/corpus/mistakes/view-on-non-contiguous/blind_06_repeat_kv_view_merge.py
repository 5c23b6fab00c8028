"""repeat_kv: merges batch and groups with .view before expanding, which fails for non-contiguous keys/values."""
import torch


def repeat_kv(x, group_size):
    B, G, T, hd = x.shape
    y = x.view(B * G, 1, T, hd).expand(B * G, group_size, T, hd)
    return y.reshape(B, G * group_size, T, hd)
