"""softmax: Handles -inf and all--inf slices correctly but never subtracts the maximum, so large scores overflow exp to inf and give NaN (written blind, from the contract alone)."""
import torch


def softmax(x, dim=-1):
    e = torch.exp(x)
    s = e.sum(dim=dim, keepdim=True)
    s = torch.where(s == 0, torch.ones_like(s), s)  # all -inf slice -> zeros
    return e / s
