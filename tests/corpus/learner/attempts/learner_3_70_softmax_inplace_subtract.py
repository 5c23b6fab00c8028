"""softmax: (common slip) subtracted the maximum in place (x -= m), which modifies the caller's tensor."""
import torch


def softmax(x, dim=-1):
    m = x.amax(dim=dim, keepdim=True)
    m = torch.where(torch.isinf(m), torch.zeros_like(m), m)
    x -= m
    e = torch.exp(x)
    s = e.sum(dim=dim, keepdim=True)
    return torch.where(s > 0, e / torch.where(s > 0, s, torch.ones_like(s)), torch.zeros_like(e))
