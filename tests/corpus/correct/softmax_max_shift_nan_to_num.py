"""softmax: subtract the maximum, turning the NaN that an all -inf slice gives (-inf minus -inf) back
into -inf before the exp, so that slice is zeros with no NaN in its gradient either."""
import torch


def softmax(x, dim=-1):
    shifted = torch.nan_to_num(x - x.max(dim=dim, keepdim=True).values, nan=float("-inf"))
    e = torch.exp(shifted)
    total = e.sum(dim=dim, keepdim=True)
    # 1, not the smallest float, for an empty slice: 1/tiny times a large output gradient overflows to
    # inf, and inf * 0 is a NaN gradient (the contract asks for zero gradients there)
    return e / torch.where(total > 0, total, torch.ones_like(total))
