"""softmax_naive: divided by the sum of the whole tensor instead of the sum along dim"""
import torch


def softmax_naive(x, dim=-1):
    return torch.exp(x) / torch.exp(x).sum()
