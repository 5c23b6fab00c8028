"""softmax: exp(x - logsumexp(x)); a slice with every entry -inf gives zeros, and no NaN in its gradient
(its logsumexp is taken over zeros instead, and its output masked)."""
import torch


def softmax(x, dim=-1):
    everything_hidden = torch.isneginf(x).all(dim=dim, keepdim=True)
    lse = torch.logsumexp(x.masked_fill(everything_hidden, 0.0), dim=dim, keepdim=True)
    return torch.exp(x - lse).masked_fill(everything_hidden, 0.0)
