"""softmax: subtracts the per-slice max correctly but does not handle slices that are entirely -inf, which give NaN."""
import torch


def softmax(x, dim=-1):
    m = x.amax(dim=dim, keepdim=True)
    e = torch.exp(x - m)
    return e / e.sum(dim=dim, keepdim=True)
