"""softmax: subtract the maximum, turning the NaN that an all -inf slice gives (-inf minus -inf) back
into -inf before the exp, so that slice is zeros with no NaN in its gradient either."""
import torch


def softmax(x, dim=-1):
    shifted = torch.nan_to_num(x - x.max(dim=dim, keepdim=True).values, nan=float("-inf"))
    e = torch.exp(shifted)
    return e / e.sum(dim=dim, keepdim=True).clamp_min(torch.finfo(x.dtype).tiny)
