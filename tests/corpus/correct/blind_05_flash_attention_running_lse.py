"""flash_attention: running log-sum-exp per query with torch.logaddexp, normalised partial outputs merged."""
import math
import torch


def flash_attention(queries, keys, values, block_size=64, causal=False):
    Tq = queries.shape[-2]
    Tk = keys.shape[-2]
    scale = 1.0 / math.sqrt(queries.shape[-1])
    results = []
    for qs in range(0, Tq, block_size):
        qe = min(Tq, qs + block_size)
        qb = queries[..., qs:qe, :] * scale
        lse = None
        o = None
        for ks in range(0, Tk, block_size):
            if causal and ks >= qe:
                break
            ke = min(Tk, ks + block_size)
            s = torch.einsum("...qd,...kd->...qk", qb, keys[..., ks:ke, :])
            if causal:
                qi = torch.arange(qs, qe, device=s.device).view(-1, 1)
                kj = torch.arange(ks, ke, device=s.device).view(1, -1)
                s = torch.where(kj <= qi, s, torch.full_like(s, float("-inf")))
            blk_lse = torch.logsumexp(s, dim=-1, keepdim=True)
            blk_out = torch.exp(s - blk_lse) @ values[..., ks:ke, :]
            if o is None:
                lse, o = blk_lse, blk_out
            else:
                new_lse = torch.logaddexp(lse, blk_lse)
                o = torch.exp(lse - new_lse) * o + torch.exp(blk_lse - new_lse) * blk_out
                lse = new_lse
        results.append(o)
    return torch.cat(results, dim=-2)
