"""Attempt 44 at softmax (common slip).

MISTAKE: (common slip) The shift is done in place, x -= m, which overwrites the caller's input tensor.
"""
import torch


def softmax(x, dim=-1):
    """MISTAKE: (common slip) x -= m modifies the caller's input in place."""
    m = x.amax(dim=dim, keepdim=True)
    m = torch.where(torch.isinf(m), torch.zeros_like(m), m)
    x -= m
    e = torch.exp(x)
    s = e.sum(dim=dim, keepdim=True)
    return e / torch.where(s > 0, s, torch.ones_like(s))
