"""flash_attention: the online softmax over key blocks, on unscaled scores."""
import torch


def flash_attention(queries, keys, values, block_size=64, causal=False):
    m = torch.full(queries.shape[:-1], float("-inf"), dtype=queries.dtype, device=queries.device)
    l = torch.zeros_like(m)
    acc = torch.zeros(*queries.shape[:-1], values.shape[-1], dtype=queries.dtype, device=queries.device)
    rows = torch.arange(queries.shape[-2], device=queries.device)[:, None]
    for j in range(0, keys.shape[-2], block_size):
        s = queries @ keys[..., j:j + block_size, :].transpose(-2, -1)
        if causal:
            cols = torch.arange(j, j + s.shape[-1], device=queries.device)[None, :]
            s = s.masked_fill(cols > rows, float("-inf"))
        m_new = torch.maximum(m, s.amax(-1))
        shift = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
        p = torch.exp(s - shift[..., None])
        correction = torch.exp(m - shift)
        l = l * correction + p.sum(-1)
        acc = acc * correction[..., None] + p @ values[..., j:j + block_size, :]
        m = m_new
    return acc / l.clamp_min(1e-30)[..., None]
