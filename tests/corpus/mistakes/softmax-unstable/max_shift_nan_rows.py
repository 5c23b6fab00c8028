"""softmax: shifts by the maximum, but an all -inf row computes -inf - (-inf) = nan."""
import torch


def softmax(x, dim=-1):
    biggest = x.max(dim=dim, keepdim=True).values
    numerators = (x - biggest).exp()
    return numerators / numerators.sum(dim=dim, keepdim=True)
