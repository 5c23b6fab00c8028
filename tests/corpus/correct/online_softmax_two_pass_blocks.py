"""online_softmax: running max and sum per block with torch.where guards for -inf."""
import torch


def online_softmax(x, block_size):
    m = torch.full_like(x[..., 0], float("-inf"))
    s = torch.zeros_like(x[..., 0])
    for i in range(0, x.size(-1), block_size):
        blk = x[..., i:i + block_size]
        m_new = torch.maximum(m, blk.max(dim=-1).values)
        safe = torch.where(m_new == float("-inf"), torch.zeros_like(m_new), m_new)
        s = s * torch.exp(m - safe) + torch.exp(blk - safe.unsqueeze(-1)).sum(dim=-1)
        m = m_new
    safe = torch.where(m == float("-inf"), torch.zeros_like(m), m)
    out = torch.exp(x - safe.unsqueeze(-1)) / s.unsqueeze(-1)
    return torch.nan_to_num(out, nan=0.0)
