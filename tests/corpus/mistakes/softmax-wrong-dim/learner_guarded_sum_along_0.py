"""softmax: the lesson's stable softmax with only the sum's dimension changed to 0 (issue 45: named nothing)."""
import torch


def softmax(x, dim=-1):
    shift = x.amax(dim=dim, keepdim=True)
    shift = torch.where(torch.isinf(shift), torch.zeros_like(shift), shift)
    e = torch.exp(x - shift)
    return e / e.sum(dim=0, keepdim=True).clamp_min(1.0)
