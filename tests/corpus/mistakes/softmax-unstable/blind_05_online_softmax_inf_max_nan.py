"""online_softmax: textbook running max / sum with no guard for a max that is still -inf (all--inf rows and leading all--inf blocks give NaN)."""
import torch


def online_softmax(x, block_size):
    n = x.shape[-1]
    stat_shape = x.shape[:-1] + (1,)
    m = torch.full(stat_shape, float("-inf"), dtype=x.dtype, device=x.device)
    s = torch.zeros(stat_shape, dtype=x.dtype, device=x.device)
    for start in range(0, n, block_size):
        blk = x[..., start:start + block_size]
        m_new = torch.maximum(m, blk.amax(dim=-1, keepdim=True))
        s = s * torch.exp(m - m_new) + torch.exp(blk - m_new).sum(dim=-1, keepdim=True)
        m = m_new
    return torch.exp(x - m) / s
