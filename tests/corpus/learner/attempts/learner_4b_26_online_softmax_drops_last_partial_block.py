import math
import torch


def online_softmax(x, block_size):
    """MISTAKE: tile boundary: loops range(0, N - block_size + 1, block_size), so a last, shorter block
    (N not a multiple of block_size, or block_size > N) is never added to the statistics."""
    N = x.shape[-1]
    m = torch.full(x.shape[:-1], float("-inf"), dtype=x.dtype, device=x.device)
    s = torch.zeros(x.shape[:-1], dtype=x.dtype, device=x.device)
    for start in range(0, N - block_size + 1, block_size):
        block = x[..., start:start + block_size]
        m_new = torch.maximum(m, block.amax(dim=-1))
        shift = _shift(m_new)
        s = s * torch.exp(m - shift) + torch.exp(block - shift[..., None]).sum(dim=-1)
        m = m_new
    p = torch.exp(x - _shift(m)[..., None])
    safe = torch.where(s == 0, torch.ones_like(s), s)
    return p / safe[..., None]
