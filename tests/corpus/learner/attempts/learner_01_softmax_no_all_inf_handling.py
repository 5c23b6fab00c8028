"""softmax: subtracted the per-slice max but did not handle an all -inf slice (gives NaN)"""
import torch


def softmax(x, dim=-1):
    m = x.amax(dim=dim, keepdim=True)
    e = torch.exp(x - m)
    return e / e.sum(dim=dim, keepdim=True)
