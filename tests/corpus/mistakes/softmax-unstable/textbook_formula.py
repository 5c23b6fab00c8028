"""softmax: the formula straight from the textbook, exp(x) / sum(exp(x))."""
import torch


def softmax(x, dim=-1):
    e = torch.exp(x)
    return e / torch.sum(e, dim=dim, keepdim=True)
