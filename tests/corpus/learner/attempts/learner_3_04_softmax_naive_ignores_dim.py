"""softmax_naive: normalised by the sum over the whole tensor instead of along `dim`."""
import torch


def softmax_naive(x, dim=-1):
    e = torch.exp(x)
    return e / e.sum()
