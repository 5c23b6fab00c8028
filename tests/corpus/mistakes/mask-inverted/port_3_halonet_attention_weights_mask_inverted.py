"""attention_weights: masked_fill_(mask, max_neg_value) with a mask that is True at the positions that should be
seen, so the visible keys are hidden and the hidden ones kept (mask inverted).

Source: https://github.com/lucidrains/halonet-pytorch/blob/main/halonet_pytorch/halonet_pytorch.py (HaloAttention:
mask built True at valid positions, then sim.masked_fill_(mask, max_neg_value))
Bug report: https://github.com/lucidrains/halonet-pytorch/issues/4 "[Bug] the attention mask should be reversed"
Port: lucidrains style (q * scale, einsum, -finfo.max, softmax); the course's mask (True = hidden) is turned into
halonet's "valid" mask (~mask) and then used as the fill mask, as halonet does.
"""
import torch
from torch import einsum


def attention_weights(queries, keys, mask=None):
    scale = queries.shape[-1] ** -0.5
    q = queries * scale
    sim = einsum('... i d, ... j d -> ... i j', q, keys)
    if mask is not None:
        valid = ~mask
        max_neg_value = -torch.finfo(sim.dtype).max
        sim = sim.masked_fill(valid, max_neg_value)
    return sim.softmax(dim = -1)
