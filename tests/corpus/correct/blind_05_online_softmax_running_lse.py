"""online_softmax: a single running log-sum-exp per row, output exp(x - lse)."""
import torch


def online_softmax(x, block_size):
    n = x.shape[-1]
    lse = torch.full(x.shape[:-1] + (1,), float("-inf"), dtype=x.dtype, device=x.device)
    for start in range(0, n, block_size):
        blk = x[..., start:start + block_size]
        big = torch.maximum(lse, blk.amax(dim=-1, keepdim=True))
        big = torch.where(torch.isfinite(big), big, torch.zeros_like(big))
        total = torch.exp(lse - big) + torch.exp(blk - big).sum(dim=-1, keepdim=True)
        ok = total > 0
        lse = torch.where(ok, big + torch.log(torch.where(ok, total, torch.ones_like(total))),
                          torch.full_like(total, float("-inf")))
    lse = torch.where(torch.isfinite(lse), lse, torch.zeros_like(lse))
    return torch.exp(x - lse)
