"""softmax: the all -inf slices kept by a torch.where placed after the division: the forward is right, but e / s is 0/0 on the rows the where hides, and its gradient (NaN) flows through the unselected branch (issue 34, item 1)."""
import torch


def softmax(x, dim=-1):
    m = x.amax(dim=dim, keepdim=True)
    m = torch.where(torch.isinf(m), torch.zeros_like(m), m)
    e = torch.exp(x - m)
    s = e.sum(dim=dim, keepdim=True)
    return torch.where(s > 0, e / s, 0)
