"""flash_attention: forgot to multiply the query block by 1/sqrt(d)"""
import math

import torch


def flash_attention(queries, keys, values, block_size=64, causal=False):
    Tq, d = queries.shape[-2], queries.shape[-1]
    Tk = keys.shape[-2]
    dv = values.shape[-1]
    batch = queries.shape[:-2]
    outs = []
    for qs in range(0, Tq, block_size):
        q = queries[..., qs:qs + block_size, :]
        bq = q.shape[-2]
        m = torch.full((*batch, bq), float("-inf"), dtype=queries.dtype, device=queries.device)
        l = torch.zeros((*batch, bq), dtype=queries.dtype, device=queries.device)
        acc = torch.zeros((*batch, bq, dv), dtype=queries.dtype, device=queries.device)
        q_pos = torch.arange(qs, qs + bq, device=queries.device)
        for ks in range(0, Tk, block_size):
            if causal and ks > qs + bq - 1:
                break
            k = keys[..., ks:ks + block_size, :]
            v = values[..., ks:ks + block_size, :]
            S = q @ k.transpose(-2, -1)
            if causal:
                k_pos = torch.arange(ks, ks + k.shape[-2], device=queries.device)
                S = S.masked_fill(k_pos[None, :] > q_pos[:, None], float("-inf"))
            m_new = torch.maximum(m, S.amax(dim=-1))
            rescale = torch.exp(_shift(m) - _shift(m_new))
            rescale = torch.where(torch.isinf(m), torch.zeros_like(rescale), rescale)
            P = torch.exp(S - _shift(m_new)[..., None])
            l = l * rescale + P.sum(dim=-1)
            acc = acc * rescale[..., None] + P @ v
            m = m_new
        safe_l = torch.where(l == 0, torch.ones_like(l), l)
        outs.append(acc / safe_l[..., None])
    return torch.cat(outs, dim=-2)
