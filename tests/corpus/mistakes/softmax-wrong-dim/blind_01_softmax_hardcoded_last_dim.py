"""softmax: Stable, -inf-safe softmax that ignores its dim argument and always reduces over the last dimension (written blind, from the contract alone)."""
import torch


def softmax(x, dim=-1):
    m = x.amax(dim=-1, keepdim=True)
    m = torch.where(torch.isinf(m), torch.zeros_like(m), m)
    e = torch.exp(x - m)
    s = e.sum(dim=-1, keepdim=True)
    return e / torch.where(s == 0, torch.ones_like(s), s)
