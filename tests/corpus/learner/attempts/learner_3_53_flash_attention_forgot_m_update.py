"""flash_attention: forgot `m = m_new` at the end of the key-block loop, so the running maximum stays -inf and every block wipes out the previous accumulation."""
import math

import torch


def flash_attention(queries, keys, values, block_size=64, causal=False):
    Tq, d = queries.shape[-2], queries.shape[-1]
    Tk = keys.shape[-2]
    dv = values.shape[-1]
    lead = queries.shape[:-2]
    q_all = queries / math.sqrt(d)
    outs = []
    for qs in range(0, Tq, block_size):
        qb = q_all[..., qs:qs + block_size, :]
        bq = qb.shape[-2]
        m = torch.full((*lead, bq), float("-inf"), dtype=queries.dtype, device=queries.device)
        l = torch.zeros((*lead, bq), dtype=queries.dtype, device=queries.device)
        acc = torch.zeros((*lead, bq, dv), dtype=queries.dtype, device=queries.device)
        q_pos = torch.arange(qs, qs + bq, device=queries.device)
        for ks in range(0, Tk, block_size):
            if causal and ks > qs + bq - 1:
                break
            kb = keys[..., ks:ks + block_size, :]
            vb = values[..., ks:ks + block_size, :]
            S = qb @ kb.transpose(-2, -1)
            if causal:
                k_pos = torch.arange(ks, ks + kb.shape[-2], device=queries.device)
                S = S.masked_fill(k_pos[None, :] > q_pos[:, None], float("-inf"))
            m_new = torch.maximum(m, S.amax(dim=-1))
            shift = _shift(m_new)
            rescale = torch.exp(m - shift)
            P = torch.exp(S - shift[..., None])
            l = l * rescale + P.sum(dim=-1)
            acc = acc * rescale[..., None] + P @ vb
        safe = torch.where(l > 0, l, torch.ones_like(l))
        outs.append(torch.where((l > 0)[..., None], acc / safe[..., None], torch.zeros_like(acc)))
    return torch.cat(outs, dim=-2)
