"""Attempt 09 at softmax.

MISTAKE: x.max(dim=dim, keepdim=True) returns a (values, indices) named tuple, not a tensor; subtracting it raises TypeError (should use .values or x.amax); the all -inf case is not handled either.
"""
import torch


def softmax(x, dim=-1):
    """MISTAKE: x.max(dim=dim, keepdim=True) returns a (values, indices) named tuple, not a tensor; subtracting it raises TypeError (should use .values or x.amax); the all -inf case is not handled either."""
    m = x.max(dim=dim, keepdim=True)
    e = torch.exp(x - m)
    return e / e.sum(dim=dim, keepdim=True)
