"""softmax: shifts by x.max() of the whole tensor, its 0/0 guarded (round 7 learner: numbers only).

Assignment 01: attention basics (no trainable weights)."""

import torch

def softmax(x, dim=-1):
    m = x.max()
    m = torch.where(torch.isinf(m), torch.zeros_like(m), m)
    e = torch.exp(x - m)
    s = e.sum(dim=dim, keepdim=True)
    s = torch.where(s == 0, torch.ones_like(s), s)
    return e / s
