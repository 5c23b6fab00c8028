"""softmax: exp(x - logsumexp(x)), with all -inf slices sent to zero explicitly."""
import torch


def softmax(x, dim=-1):
    lse = torch.logsumexp(x, dim=dim, keepdim=True)
    everything_hidden = torch.isneginf(lse)
    lse = torch.where(everything_hidden, torch.zeros_like(lse), lse)
    return torch.exp(x - lse)
