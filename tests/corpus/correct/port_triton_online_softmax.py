"""online_softmax: port of openai/triton python/tutorials/06-fused-attention.py _attn_fwd_inner's m_i / l_i recurrence in base 2 (m_ij = max(m_i, max(x)), alpha = exp2(m_i - m_ij), l_i = l_i * alpha + sum(exp2(x - m_ij))) over one row's blocks, then normalised"""
import torch

LOG2E = 1.44269504


def online_softmax(x, block_size):
    N = x.shape[-1]
    x2 = x * LOG2E  # the kernel works in base 2
    m_i = torch.full(x.shape[:-1], float("-inf"), dtype=x.dtype, device=x.device)
    l_i = torch.zeros(x.shape[:-1], dtype=x.dtype, device=x.device)
    for start_n in range(0, N, block_size):
        blk = x2[..., start_n:start_n + block_size]
        m_ij = torch.maximum(m_i, blk.amax(-1).detach())
        shift = _shift(m_ij)  # the course's helper: -inf (nothing visible yet) -> 0
        alpha = torch.exp2(m_i - shift)
        l_i = l_i * alpha + torch.exp2(blk - shift[..., None]).sum(-1)
        m_i = m_ij
    shift = _shift(m_i)
    l_i = torch.where(l_i == 0, torch.ones_like(l_i), l_i)
    return torch.exp2(x2 - shift[..., None]) / l_i[..., None]
