"""softmax: subtracts the maximum in place to save memory."""
import torch


def softmax(x, dim=-1):
    m = x.amax(dim=dim, keepdim=True)
    m[torch.isinf(m)] = 0.0
    x -= m
    e = x.exp()
    return e / e.sum(dim=dim, keepdim=True).clamp_min(1.0)
