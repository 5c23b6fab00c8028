import math
import torch


def online_softmax(x, block_size):
    """MISTAKE: takes block.max() over the whole block tensor (all rows at once) instead of per row
    (amax(dim=-1)), so every row shares one maximum; rows far below it underflow to 0/0."""
    N = x.shape[-1]
    m = torch.full(x.shape[:-1], float("-inf"), dtype=x.dtype, device=x.device)
    s = torch.zeros(x.shape[:-1], dtype=x.dtype, device=x.device)
    for start in range(0, N, block_size):
        block = x[..., start:start + block_size]
        m_new = torch.maximum(m, block.max().expand_as(m))
        shift = _shift(m_new)
        s = s * torch.exp(m - shift) + torch.exp(block - shift[..., None]).sum(dim=-1)
        m = m_new
    p = torch.exp(x - _shift(m)[..., None])
    safe = torch.where(s == 0, torch.ones_like(s), s)
    return p / safe[..., None]
