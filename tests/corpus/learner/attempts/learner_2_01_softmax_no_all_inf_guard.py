"""softmax: (deliberate) Stable softmax that subtracts the max but does not handle an all -inf slice: -inf - (-inf) = NaN."""
import torch


def softmax(x, dim=-1):
    e = torch.exp(x - x.amax(dim=dim, keepdim=True))
    return e / e.sum(dim=dim, keepdim=True)
