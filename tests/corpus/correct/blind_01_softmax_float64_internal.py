"""softmax: Computes the max-shifted softmax in float64 (nan_to_num(neginf=0) on the max, double torch.where for empty slices) and casts back to x.dtype (written blind, from the contract alone)."""
import torch


def softmax(x, dim=-1):
    z = x.to(torch.float64)
    hi = z.amax(dim=dim, keepdim=True)
    hi = torch.nan_to_num(hi, neginf=0.0)
    p = torch.exp(z - hi)
    s = p.sum(dim=dim, keepdim=True)
    p = torch.where(s > 0, p / torch.where(s > 0, s, torch.ones_like(s)), torch.zeros_like(p))
    return p.to(x.dtype)
