"""online_softmax: looped over N // block_size full blocks only, so a last, shorter block is never seen when block_size does not divide N."""
import torch


def online_softmax(x, block_size):
    N = x.shape[-1]
    m = torch.full(x.shape[:-1], float("-inf"), dtype=x.dtype, device=x.device)
    s = torch.zeros(x.shape[:-1], dtype=x.dtype, device=x.device)
    for b in range(N // block_size):
        block = x[..., b * block_size:(b + 1) * block_size]
        m_new = torch.maximum(m, block.amax(dim=-1))
        shift = _shift(m_new)
        s = s * torch.exp(m - shift) + torch.exp(block - shift[..., None]).sum(dim=-1)
        m = m_new
    e = torch.exp(x - _shift(m)[..., None])
    safe = torch.where(s > 0, s, torch.ones_like(s))
    return torch.where((s > 0)[..., None], e / safe[..., None], torch.zeros_like(e))
