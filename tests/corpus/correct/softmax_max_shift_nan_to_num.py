"""softmax: subtract the maximum, and turn the NaN of all -inf slices into zeros afterwards."""
import torch


def softmax(x, dim=-1):
    shifted = x - x.max(dim=dim, keepdim=True).values
    e = torch.exp(shifted)
    return torch.nan_to_num(e / e.sum(dim=dim, keepdim=True), nan=0.0)
