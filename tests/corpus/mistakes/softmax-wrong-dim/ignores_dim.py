"""softmax: always normalises the last dimension, whatever dim says."""
import torch


def softmax(x, dim=-1):
    shift = x.amax(dim=-1, keepdim=True)
    shift = torch.where(torch.isinf(shift), torch.zeros_like(shift), shift)
    e = torch.exp(x - shift)
    return e / e.sum(dim=-1, keepdim=True).clamp_min(1.0)
