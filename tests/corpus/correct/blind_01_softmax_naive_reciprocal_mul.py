"""softmax_naive: Multiplies the exponentials by torch.reciprocal of their keepdim sum instead of dividing (written blind, from the contract alone)."""
import torch


def softmax_naive(x, dim=-1):
    numerator = torch.exp(x)
    denominator = torch.sum(numerator, dim=dim, keepdim=True)
    return numerator * torch.reciprocal(denominator)
