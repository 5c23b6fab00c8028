"""flash_attention: (deliberate) Computed the whole [Tq, Tk] score table up front and only sliced tiles out of it (memory bound broken)."""
import math

import torch


def flash_attention(queries, keys, values, block_size=64, causal=False):
    Tq, d = queries.shape[-2], queries.shape[-1]
    Tk = keys.shape[-2]
    dv = values.shape[-1]
    scores = queries @ keys.transpose(-2, -1) / math.sqrt(d)
    outputs = []
    for qs in range(0, Tq, block_size):
        bq = min(block_size, Tq - qs)
        m = torch.full((*queries.shape[:-2], bq), float("-inf"), dtype=queries.dtype, device=queries.device)
        l = torch.zeros_like(m)
        acc = torch.zeros(*queries.shape[:-2], bq, dv, dtype=values.dtype, device=values.device)
        for ks in range(0, Tk, block_size):
            if causal and ks > qs + bq - 1:
                break
            v = values[..., ks:ks + block_size, :]
            S = scores[..., qs:qs + bq, ks:ks + block_size]
            if causal:
                qi = torch.arange(qs, qs + bq, device=S.device)[:, None]
                kj = torch.arange(ks, ks + S.shape[-1], device=S.device)[None, :]
                S = S.masked_fill(kj > qi, float("-inf"))
            m_new = torch.maximum(m, S.amax(dim=-1))
            shift = _shift(m_new)
            rescale = torch.exp(m - shift)
            P = torch.exp(S - shift[..., None])
            l = l * rescale + P.sum(dim=-1)
            acc = acc * rescale[..., None] + P @ v
            m = m_new
        l = torch.where(l == 0, torch.ones_like(l), l)
        outputs.append(acc / l[..., None])
    return torch.cat(outputs, dim=-2)
