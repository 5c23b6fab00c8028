"""repeat_kv: advanced indexing with a group index repeated in place, [0,0,1,1,...]."""
import torch


def repeat_kv(x, group_size):
    groups = torch.arange(x.size(1), device=x.device).repeat_interleave(group_size)
    return x[:, groups]
