"""softmax: computed in float64 with the max shift, then cast back to the input's dtype."""
import torch


def softmax(x, dim=-1):
    wide = x.double()
    m = wide.amax(dim=dim, keepdim=True)
    m = m.masked_fill(torch.isneginf(m), 0.0)
    e = torch.exp(wide - m)
    total = e.sum(dim=dim, keepdim=True)
    return (e / total.masked_fill(total == 0, 1.0)).to(x.dtype)
