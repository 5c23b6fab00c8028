"""softmax: Lesson recipe: subtract the keepdim amax (replaced by 0 where infinite via torch.where), exponentiate, divide by the sum with zero sums replaced by 1 (written blind, from the contract alone)."""
import torch


def softmax(x, dim=-1):
    shift = x.amax(dim=dim, keepdim=True)
    # an all -inf slice has max -inf: shift it by 0 instead, its exponentials are then all 0
    shift = torch.where(torch.isinf(shift), torch.zeros_like(shift), shift)
    e = torch.exp(x - shift)
    total = e.sum(dim=dim, keepdim=True)
    total = torch.where(total == 0, torch.ones_like(total), total)
    return e / total
