"""softmax_naive: One-liner torch.exp(x) / torch.exp(x).sum(dim, keepdim=True) (written blind, from the contract alone)."""
import torch


def softmax_naive(x, dim=-1):
    return torch.exp(x) / torch.exp(x).sum(dim=dim, keepdim=True)
