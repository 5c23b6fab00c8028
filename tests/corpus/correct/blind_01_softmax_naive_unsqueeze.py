"""softmax_naive: Sums without keepdim and restores the reduced dim with unsqueeze(dim) before dividing (written blind, from the contract alone)."""
import torch


def softmax_naive(x, dim=-1):
    e = x.exp()
    total = e.sum(dim)
    return e / total.unsqueeze(dim)
