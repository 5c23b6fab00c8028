"""softmax: max shift, the sum over dim taken with einsum against a ones vector (dim moved last)."""
import torch


def softmax(x, dim=-1):
    moved = x.movedim(dim, -1)
    m = moved.amax(dim=-1, keepdim=True)
    m = m.masked_fill(torch.isneginf(m), 0.0)
    e = torch.exp(moved - m)
    total = torch.einsum("...n,n->...", e, torch.ones(e.shape[-1], dtype=e.dtype, device=e.device))[..., None]
    out = torch.where(total > 0, e / total.masked_fill(total == 0, 1.0), torch.zeros_like(e))
    return out.movedim(-1, dim)
