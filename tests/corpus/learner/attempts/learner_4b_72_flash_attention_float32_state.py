import math
import torch


def flash_attention(queries, keys, values, block_size=64, causal=False):
    """MISTAKE (common slip): dtype: creates m, l and acc with the default dtype (float32) instead of
    the input's dtype. float64 inputs still work (type promotion), but bfloat16/float16 inputs crash
    with "expected scalar type Float but found BFloat16" at P @ values."""
    Tq, d = queries.shape[-2], queries.shape[-1]
    Tk = keys.shape[-2]
    dv = values.shape[-1]
    lead = torch.broadcast_shapes(queries.shape[:-2], keys.shape[:-2], values.shape[:-2])
    q_all = queries / math.sqrt(d)
    outs = []
    for qs in range(0, Tq, block_size):
        qe = min(qs + block_size, Tq)
        q = q_all[..., qs:qe, :]
        bq = qe - qs
        m = torch.full((*lead, bq), float("-inf"), device=queries.device)
        l = torch.zeros((*lead, bq), device=queries.device)
        acc = torch.zeros((*lead, bq, dv), device=queries.device)
        for ks in range(0, Tk, block_size):
            if causal and ks > qe - 1:
                break  # every key of this block is later than every query of the query block
            ke = min(ks + block_size, Tk)
            S = q @ keys[..., ks:ke, :].transpose(-2, -1)
            if causal and ke - 1 > qs:
                qpos = torch.arange(qs, qe, device=queries.device)
                kpos = torch.arange(ks, ke, device=queries.device)
                S = S.masked_fill(kpos[None, :] > qpos[:, None], float("-inf"))
            m_new = torch.maximum(m, S.amax(dim=-1))
            shift = _shift(m_new)
            rescale = torch.exp(m - shift)
            P = torch.exp(S - shift[..., None])
            l = l * rescale + P.sum(dim=-1)
            acc = acc * rescale[..., None] + P @ values[..., ks:ke, :]
            m = m_new
        safe = torch.where(l == 0, torch.ones_like(l), l)
        outs.append(acc / safe[..., None])
    if not outs:
        return torch.zeros((*lead, 0, dv), dtype=queries.dtype, device=queries.device)
    return torch.cat(outs, dim=-2)
