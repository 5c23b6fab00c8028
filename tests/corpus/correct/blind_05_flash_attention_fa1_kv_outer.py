"""flash_attention: FlashAttention-1 loop order (key/value blocks outside, query blocks inside), normalised output rescaled each step."""
import math
import torch


def flash_attention(queries, keys, values, block_size=64, causal=False):
    Tq, Tk = queries.shape[-2], keys.shape[-2]
    dv = values.shape[-1]
    scale = 1.0 / math.sqrt(queries.shape[-1])
    lead = queries.shape[:-2]
    q_blocks = [(s, min(s + block_size, Tq)) for s in range(0, Tq, block_size)]
    O = [queries.new_zeros(lead + (e - s, dv)) for s, e in q_blocks]
    L = [queries.new_zeros(lead + (e - s, 1)) for s, e in q_blocks]
    M = [queries.new_full(lead + (e - s, 1), float("-inf")) for s, e in q_blocks]
    for ks in range(0, Tk, block_size):
        ke = min(ks + block_size, Tk)
        Kj = keys[..., ks:ke, :]
        Vj = values[..., ks:ke, :]
        for i, (qs, qe) in enumerate(q_blocks):
            if causal and ks >= qe:
                continue
            S = queries[..., qs:qe, :] @ Kj.transpose(-1, -2) * scale
            if causal:
                future = (torch.arange(ks, ke, device=S.device)[None, :]
                          > torch.arange(qs, qe, device=S.device)[:, None])
                S = S.masked_fill(future, float("-inf"))
            m_ij = S.max(dim=-1, keepdim=True).values
            P = torch.exp(S - m_ij)
            l_ij = P.sum(dim=-1, keepdim=True)
            m_new = torch.maximum(M[i], m_ij)
            l_new = torch.exp(M[i] - m_new) * L[i] + torch.exp(m_ij - m_new) * l_ij
            O[i] = (L[i] * torch.exp(M[i] - m_new) * O[i] + torch.exp(m_ij - m_new) * (P @ Vj)) / l_new
            L[i] = l_new
            M[i] = m_new
    return torch.cat(O, dim=-2)
