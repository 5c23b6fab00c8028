"""online_softmax: Final correct version (provided helper _shift included)."""
import math
import torch


def _shift(running_max):
    """The running maximum with -inf (nothing visible yet) replaced by 0, to subtract safely."""
    return torch.where(torch.isinf(running_max), torch.zeros_like(running_max), running_max)


def online_softmax(x, block_size):
    """Softmax over the last dim, with the statistics gathered block by block in one pass.

    x: [..., N]  ->  [..., N]. Walk over blocks of ``block_size`` entries keeping a running maximum
    m and a running sum s of exp(x - m); when m grows, rescale s by exp(m_old - m_new). Then
    normalise. -inf entries get weight 0; an all -inf row gives zeros.
    Lesson section 2, "Online softmax".
    """
    stats_shape = x.shape[:-1]
    m = torch.full(stats_shape, float("-inf"), dtype=x.dtype, device=x.device)
    s = torch.zeros(stats_shape, dtype=x.dtype, device=x.device)
    N = x.shape[-1]
    for start in range(0, N, block_size):
        block = x[..., start:start + block_size]
        m_new = torch.maximum(m, block.amax(dim=-1))
        shift = _shift(m_new)
        s = s * torch.exp(m - shift) + torch.exp(block - shift[..., None]).sum(dim=-1)
        m = m_new
    e = torch.exp(x - _shift(m)[..., None])
    s = torch.where(s == 0, torch.ones_like(s), s)
    return e / s[..., None]
