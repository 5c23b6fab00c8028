"""online_softmax: the running maximum overwritten by its shift, as Dao-AILab/flash-attention#2082 (row_max_cur = 0.0 if row_max_cur == -inf else row_max_cur, kept as the running maximum): a row whose first block is all -inf keeps a maximum of 0 while its entries stay below 0, so entries below about -88 underflow and the row comes out as zeros."""
import torch


def online_softmax(x, block_size):
    m = torch.full(x.shape[:-1], float("-inf"), dtype=x.dtype, device=x.device)
    s = torch.zeros(x.shape[:-1], dtype=x.dtype, device=x.device)
    for start in range(0, x.shape[-1], block_size):
        block = x[..., start:start + block_size]
        m_new = torch.maximum(m, block.amax(dim=-1))
        m_new = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)  # no -inf - -inf below
        s = s * torch.exp(m - m_new) + torch.exp(block - m_new[..., None]).sum(dim=-1)
        m = m_new
    out = torch.exp(x - m[..., None])
    return out / torch.where(s > 0, s, torch.ones_like(s))[..., None]
