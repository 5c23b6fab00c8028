"""online_softmax: the element-by-element online softmax of the paper, one Python step per column (block_size ignored)."""
import torch


def online_softmax(x, block_size):
    stat_shape = x.shape[:-1] + (1,)
    m = torch.full(stat_shape, float("-inf"), dtype=x.dtype, device=x.device)
    d = torch.zeros(stat_shape, dtype=x.dtype, device=x.device)
    for j in range(x.shape[-1]):
        xj = x[..., j:j + 1]
        m_new = torch.maximum(m, xj)
        m_safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
        d = d * torch.exp(m - m_safe) + torch.exp(xj - m_safe)
        m = m_new
    m_safe = torch.where(torch.isinf(m), torch.zeros_like(m), m)
    return torch.exp(x - m_safe) / torch.where(d > 0, d, torch.ones_like(d))
