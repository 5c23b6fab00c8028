"""flash_attention: blocked online-softmax attention that builds the whole [Tq, Tk] causal mask up front and slices it per block (breaks the memory rule)."""
import math
import torch


def flash_attention(queries, keys, values, block_size=64, causal=False):
    Tq, d = queries.shape[-2], queries.shape[-1]
    Tk = keys.shape[-2]
    scale = 1.0 / math.sqrt(d)
    if causal:
        full_mask = torch.triu(torch.ones(Tq, Tk, dtype=torch.bool, device=queries.device), diagonal=1)
    outs = []
    for qs in range(0, Tq, block_size):
        qe = min(qs + block_size, Tq)
        q = queries[..., qs:qe, :]
        m = l = acc = None
        for ks in range(0, Tk, block_size):
            if causal and ks > qe - 1:
                break
            ke = min(ks + block_size, Tk)
            s = (q @ keys[..., ks:ke, :].transpose(-1, -2)) * scale
            if causal and ke - 1 > qs:
                s = s.masked_fill(full_mask[qs:qe, ks:ke], float("-inf"))
            v = values[..., ks:ke, :]
            blk_max = s.amax(dim=-1, keepdim=True)
            if m is None:
                m_new = blk_max
                p = torch.exp(s - m_new)
                l = p.sum(dim=-1, keepdim=True)
                acc = p @ v
            else:
                m_new = torch.maximum(m, blk_max)
                alpha = torch.exp(m - m_new)
                p = torch.exp(s - m_new)
                l = alpha * l + p.sum(dim=-1, keepdim=True)
                acc = alpha * acc + p @ v
            m = m_new
        outs.append(acc / l)
    return torch.cat(outs, dim=-2)
