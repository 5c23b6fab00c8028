"""flash_attention: (deliberate) Rescaled the running sum l but not the accumulator acc when the maximum grows."""
import math

import torch


def flash_attention(queries, keys, values, block_size=64, causal=False):
    Tq, d = queries.shape[-2], queries.shape[-1]
    Tk = keys.shape[-2]
    dv = values.shape[-1]
    scale = 1.0 / math.sqrt(d)
    outputs = []
    for qs in range(0, Tq, block_size):
        q = queries[..., qs:qs + block_size, :] * scale
        bq = q.shape[-2]
        m = torch.full(q.shape[:-1], float("-inf"), dtype=q.dtype, device=q.device)
        l = torch.zeros(q.shape[:-1], dtype=q.dtype, device=q.device)
        acc = torch.zeros(*q.shape[:-1], dv, dtype=values.dtype, device=values.device)
        for ks in range(0, Tk, block_size):
            if causal and ks > qs + bq - 1:
                break
            k = keys[..., ks:ks + block_size, :]
            v = values[..., ks:ks + block_size, :]
            S = q @ k.transpose(-2, -1)
            if causal:
                qi = torch.arange(qs, qs + bq, device=q.device)[:, None]
                kj = torch.arange(ks, ks + k.shape[-2], device=q.device)[None, :]
                S = S.masked_fill(kj > qi, float("-inf"))
            m_new = torch.maximum(m, S.amax(dim=-1))
            shift = _shift(m_new)
            rescale = torch.exp(m - shift)
            P = torch.exp(S - shift[..., None])
            l = l * rescale + P.sum(dim=-1)
            acc = acc + P @ v
            m = m_new
        l = torch.where(l == 0, torch.ones_like(l), l)
        outputs.append(acc / l[..., None])
    return torch.cat(outputs, dim=-2)
