"""flash_attention: FlashAttention-2 / Triton-tutorial style with exp2 and log2(e) folded into the scale, division deferred to the end."""
import math
import torch


def flash_attention(queries, keys, values, block_size=64, causal=False):
    LOG2E = 1.4426950408889634
    qk_scale = LOG2E / math.sqrt(queries.shape[-1])
    n_q, n_k = queries.shape[-2], keys.shape[-2]
    dev = queries.device
    blocks_out = []
    for start_m in range(0, n_q, block_size):
        end_m = min(start_m + block_size, n_q)
        q = queries[..., start_m:end_m, :]
        m_i = torch.full(q.shape[:-1], float("-inf"), dtype=q.dtype, device=dev)
        l_i = torch.zeros(q.shape[:-1], dtype=q.dtype, device=dev)
        acc = torch.zeros(q.shape[:-1] + (values.shape[-1],), dtype=q.dtype, device=dev)
        offs_m = torch.arange(start_m, end_m, device=dev)
        hi = min(n_k, end_m) if causal else n_k
        for start_n in range(0, hi, block_size):
            end_n = min(start_n + block_size, n_k)
            qk = (q @ keys[..., start_n:end_n, :].transpose(-2, -1)) * qk_scale
            if causal:
                offs_n = torch.arange(start_n, end_n, device=dev)
                qk = qk + torch.where(offs_m[:, None] >= offs_n[None, :], 0.0, float("-inf")).to(qk.dtype)
            m_ij = torch.maximum(m_i, qk.amax(-1))
            p = torch.exp2(qk - m_ij[..., None])
            alpha = torch.exp2(m_i - m_ij)
            l_i = l_i * alpha + p.sum(-1)
            acc = acc * alpha[..., None] + p @ values[..., start_n:end_n, :]
            m_i = m_ij
        blocks_out.append(acc / l_i[..., None])
    return torch.cat(blocks_out, dim=-2)
