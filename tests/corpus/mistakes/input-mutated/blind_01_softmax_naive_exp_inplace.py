"""softmax_naive: Exponentiates with x.exp_() in place, so the returned weights are right but the caller's x now holds exp(x) (written blind, from the contract alone)."""
import torch


def softmax_naive(x, dim=-1):
    e = x.exp_()  # saves an allocation
    return e / e.sum(dim=dim, keepdim=True)
