"""online_softmax: (deliberate) Forgot to rescale the running sum when the maximum grows (s = s + new terms)."""
import torch


def online_softmax(x, block_size):
    stats_shape = x.shape[:-1]
    m = torch.full(stats_shape, float("-inf"), dtype=x.dtype, device=x.device)
    s = torch.zeros(stats_shape, dtype=x.dtype, device=x.device)
    N = x.shape[-1]
    for start in range(0, N, block_size):
        block = x[..., start:start + block_size]
        m_new = torch.maximum(m, block.amax(dim=-1))
        shift = _shift(m_new)
        s = s + torch.exp(block - shift[..., None]).sum(dim=-1)
        m = m_new
    e = torch.exp(x - _shift(m)[..., None])
    s = torch.where(s == 0, torch.ones_like(s), s)
    return e / s[..., None]
