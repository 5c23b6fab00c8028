"""online_softmax: block log-sum-exp folded in with torch.logaddexp, -inf clamped to the dtype minimum for the statistics."""
import torch


def online_softmax(x, block_size):
    lowest = torch.finfo(x.dtype).min
    lse = None
    for start in range(0, x.shape[-1], block_size):
        # -inf -> most negative finite number: its exp is still 0 but the log-sum-exp stays finite
        blk = x[..., start:start + block_size].clamp(min=lowest)
        blk_lse = torch.logsumexp(blk, dim=-1, keepdim=True)
        lse = blk_lse if lse is None else torch.logaddexp(lse, blk_lse)
    return torch.exp(x - lse)
