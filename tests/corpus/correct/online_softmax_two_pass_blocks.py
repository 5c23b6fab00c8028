"""online_softmax: running max and sum per block with torch.where guards for -inf (an all -inf row divides
by 1, not 0/0: a NaN turned into 0 by nan_to_num would still leave a NaN gradient)."""
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
    return torch.exp(x - safe.unsqueeze(-1)) / torch.where(s > 0, s, torch.ones_like(s)).unsqueeze(-1)
