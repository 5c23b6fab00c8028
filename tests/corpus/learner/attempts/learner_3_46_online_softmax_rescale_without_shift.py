"""online_softmax: the rescale uses exp(m_old - m_new) without _shift, which is NaN while the row has only shown -inf."""
import torch


def online_softmax(x, block_size):
    N = x.shape[-1]
    m = torch.full(x.shape[:-1], float("-inf"), dtype=x.dtype, device=x.device)
    s = torch.zeros(x.shape[:-1], dtype=x.dtype, device=x.device)
    for start in range(0, N, block_size):
        block = x[..., start:start + block_size]
        m_new = torch.maximum(m, block.amax(dim=-1))
        s = s * torch.exp(m - m_new) + torch.exp(block - _shift(m_new)[..., None]).sum(dim=-1)
        m = m_new
    e = torch.exp(x - _shift(m)[..., None])
    safe = torch.where(s > 0, s, torch.ones_like(s))
    return torch.where((s > 0)[..., None], e / safe[..., None], torch.zeros_like(e))
