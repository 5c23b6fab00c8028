"""softmax_naive: Copies the book's 1-d version exp(x) / exp(x).sum(dim=0): ignores dim and always normalises over dim 0 (right only for 1-d input or dim=0) (written blind, from the contract alone)."""
import torch


def softmax_naive(x, dim=-1):
    return torch.exp(x) / torch.exp(x).sum(dim=0)
