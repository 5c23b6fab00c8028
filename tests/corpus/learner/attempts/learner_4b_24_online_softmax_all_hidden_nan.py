import math
import torch


def online_softmax(x, block_size):
    """MISTAKE: forgets the all -inf row case in the final step: divides by the running sum s = 0
    directly, so a fully hidden row gives 0/0 = NaN instead of zeros."""
    N = x.shape[-1]
    m = torch.full(x.shape[:-1], float("-inf"), dtype=x.dtype, device=x.device)
    s = torch.zeros(x.shape[:-1], dtype=x.dtype, device=x.device)
    for start in range(0, N, block_size):
        block = x[..., start:start + block_size]
        m_new = torch.maximum(m, block.amax(dim=-1))
        shift = _shift(m_new)
        s = s * torch.exp(m - shift) + torch.exp(block - shift[..., None]).sum(dim=-1)
        m = m_new
    p = torch.exp(x - _shift(m)[..., None])
    return p / s[..., None]
