"""online_softmax: kept the running max but forgot to rescale the old running sum when the max grows"""
import torch


def online_softmax(x, block_size):
    N = x.shape[-1]
    m = torch.full(x.shape[:-1], float("-inf"), dtype=x.dtype, device=x.device)
    s = torch.zeros(x.shape[:-1], dtype=x.dtype, device=x.device)
    for start in range(0, N, block_size):
        block = x[..., start:start + block_size]
        m_new = torch.maximum(m, block.amax(dim=-1))
        s = s + torch.exp(block - _shift(m_new)[..., None]).sum(dim=-1)
        m = m_new
    safe_s = torch.where(s == 0, torch.ones_like(s), s)
    return torch.exp(x - _shift(m)[..., None]) / safe_s[..., None]
