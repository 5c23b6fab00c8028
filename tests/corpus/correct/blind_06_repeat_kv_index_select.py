"""repeat_kv: index_select with head index h -> group h // group_size."""
import torch


def repeat_kv(x, group_size):
    num_groups = x.shape[1]
    idx = torch.arange(num_groups * group_size, device=x.device) // group_size
    return x.index_select(1, idx)
