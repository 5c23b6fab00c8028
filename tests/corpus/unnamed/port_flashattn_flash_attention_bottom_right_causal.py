"""flash_attention: flash-attn 2.1+'s causal mask aligned to the bottom-right corner (query i sees keys j <= i + Tk - Tq), not the top-left one of is_causal=True (https://github.com/Dao-AILab/flash-attention/issues/517)"""
import torch


def flash_attention(queries, keys, values, block_size=64, causal=False):
    scale = queries.shape[-1] ** -0.5
    Tq, Tk = queries.shape[-2], keys.shape[-2]
    rows = []
    for qs in range(0, Tq, block_size):
        q = queries[..., qs:qs + block_size, :] * scale
        bq = q.shape[-2]
        m = torch.full(q.shape[:-1] + (1,), float("-inf"), dtype=q.dtype, device=q.device)
        l = torch.zeros(q.shape[:-1] + (1,), dtype=q.dtype, device=q.device)
        acc = torch.zeros(q.shape[:-1] + (values.shape[-1],), dtype=q.dtype, device=q.device)
        for ks in range(0, Tk, block_size):
            s = q @ keys[..., ks:ks + block_size, :].transpose(-2, -1)
            if causal:
                row = torch.arange(qs, qs + bq, device=q.device)[:, None]
                col = torch.arange(ks, ks + s.shape[-1], device=q.device)[None, :]
                s = s.masked_fill(col > row + Tk - Tq, float("-inf"))  # the bug: bottom-right alignment
            m_new = torch.maximum(m, s.amax(-1, keepdim=True).detach())
            sh = _shift(m_new)
            p = torch.exp(s - sh)
            alpha = torch.exp(m - sh)
            l = l * alpha + p.sum(-1, keepdim=True)
            acc = acc * alpha + p @ values[..., ks:ks + block_size, :]
            m = m_new
        rows.append(acc / torch.where(l == 0, torch.ones_like(l), l))
    return torch.cat(rows, dim=-2)
