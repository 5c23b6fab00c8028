"""online_softmax: all--inf rows give zeros in the forward pass via torch.where, but the masked branch divides 0/0 so their gradient is NaN."""
import torch


def online_softmax(x, block_size):
    n = x.shape[-1]
    stat_shape = x.shape[:-1] + (1,)
    m = torch.full(stat_shape, float("-inf"), dtype=x.dtype, device=x.device)
    s = torch.zeros(stat_shape, dtype=x.dtype, device=x.device)
    for start in range(0, n, block_size):
        blk = x[..., start:start + block_size]
        m_new = torch.maximum(m, blk.amax(dim=-1, keepdim=True))
        m_safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
        s = s * torch.exp(m - m_safe) + torch.exp(blk - m_safe).sum(dim=-1, keepdim=True)
        m = m_new
    m_safe = torch.where(torch.isinf(m), torch.zeros_like(m), m)
    e = torch.exp(x - m_safe)
    return torch.where(s > 0, e / s, torch.zeros_like(e))
