"""softmax: an online first pass (running max and rescaled running sum, element by element along dim), then exp."""
import torch


def softmax(x, dim=-1):
    moved = x.movedim(dim, 0)
    running_max = torch.full_like(moved[0], float("-inf"))
    running_sum = torch.zeros_like(moved[0])
    for slice_ in moved:
        new_max = torch.maximum(running_max, slice_)
        safe = new_max.masked_fill(torch.isneginf(new_max), 0.0)
        running_sum = running_sum * torch.exp(running_max - safe) + torch.exp(slice_ - safe)
        running_max = new_max
    safe = running_max.masked_fill(torch.isneginf(running_max), 0.0)
    total = running_sum.masked_fill(running_sum == 0, 1.0)
    return (torch.exp(moved - safe) / total).movedim(0, dim)
