"""softmax_naive: Moves dim to the end with torch.movedim, normalises over the last axis and moves it back (written blind, from the contract alone)."""
import torch


def softmax_naive(x, dim=-1):
    e = torch.movedim(torch.exp(x), dim, -1)
    out = e / torch.sum(e, -1, keepdim=True)
    return torch.movedim(out, -1, dim)
