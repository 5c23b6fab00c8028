"""softmax: port of openai/triton python/tutorials/02-fused-softmax.py naive_softmax (row max subtracted, exp, divided by the row sum), over any dim, an all -inf slice giving zeros)"""
import torch


def softmax(x, dim=-1):
    # read the max of each slice and subtract it (triton's naive_softmax, x_max = x.max(dim=1)[0])
    x_max = x.amax(dim=dim, keepdim=True)
    # contract: an all -inf slice gives zeros, not NaN (the tutorial never sees one)
    x_max = torch.where(torch.isinf(x_max) & (x_max < 0), torch.zeros_like(x_max), x_max)
    z = x - x_max
    numerator = torch.exp(z)
    denominator = numerator.sum(dim=dim, keepdim=True)
    denominator = torch.where(denominator == 0, torch.ones_like(denominator), denominator)
    return numerator / denominator
