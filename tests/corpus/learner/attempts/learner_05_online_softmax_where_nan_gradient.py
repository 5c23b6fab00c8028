"""online_softmax: the learner's final version, wrong after all: torch.where(isinf(m), 0, exp(m - m_new)) takes the gradient of the branch it drops, exp of a huge number when a first block lies far below the rest, so the gradients are NaN there (found by benchmarks/seed_stability.py: it lost points on 1 seed in 20)"""
import torch


def online_softmax(x, block_size):
    N = x.shape[-1]
    m = torch.full(x.shape[:-1], float("-inf"), dtype=x.dtype, device=x.device)
    s = torch.zeros(x.shape[:-1], dtype=x.dtype, device=x.device)
    for start in range(0, N, block_size):
        block = x[..., start:start + block_size]
        m_new = torch.maximum(m, block.amax(dim=-1))
        rescale = torch.exp(_shift(m) - _shift(m_new))
        rescale = torch.where(torch.isinf(m), torch.zeros_like(rescale), rescale)
        s = s * rescale + torch.exp(block - _shift(m_new)[..., None]).sum(dim=-1)
        m = m_new
    safe_s = torch.where(s == 0, torch.ones_like(s), s)
    return torch.exp(x - _shift(m)[..., None]) / safe_s[..., None]
