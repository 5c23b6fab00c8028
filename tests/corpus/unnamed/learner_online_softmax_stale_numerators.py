"""online_softmax: keeps each block's exponentials against the running maximum of that moment and divides them by the final sum, never rescaling the earlier blocks (issue 46: "off at 10 of 12 entries" with nothing more)."""
import torch


def _shift(m):
    return torch.where(torch.isinf(m), torch.zeros_like(m), m)


def online_softmax(x, block_size):
    running_max = x.new_full(x.shape[:-1], float("-inf"))
    running_sum = x.new_zeros(x.shape[:-1])
    parts = []
    for start in range(0, x.shape[-1], block_size):
        block = x[..., start:start + block_size]
        new_max = torch.maximum(running_max, block.amax(dim=-1))
        shift = _shift(new_max)
        e = torch.exp(block - shift[..., None])
        running_sum = running_sum * torch.exp(running_max - shift) + e.sum(dim=-1)
        parts.append(e)
        running_max = new_max
    return torch.cat(parts, dim=-1) / running_sum.clamp_min(1.0)[..., None]
