"""softmax: in the log domain, log p = x - (m + log(sum(exp(x - m)))), then exp; an all -inf slice gives zeros."""
import torch


def softmax(x, dim=-1):
    m = x.amax(dim=dim, keepdim=True)
    hidden = torch.isneginf(m)
    m = torch.where(hidden, torch.zeros_like(m), m)
    log_total = m + torch.log(torch.exp(x - m).sum(dim=dim, keepdim=True).clamp_min(torch.finfo(x.dtype).tiny))
    return torch.where(hidden, torch.zeros_like(x), torch.exp(x - log_total))
