"""softmax_naive: Expands the keepdim partition sum explicitly with expand_as and divides with torch.div (written blind, from the contract alone)."""
import torch


def softmax_naive(x, dim=-1):
    e = torch.exp(x)
    z = e.sum(dim=dim, keepdim=True).expand_as(e)
    return torch.div(e, z)
