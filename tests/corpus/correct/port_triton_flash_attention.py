"""flash_attention: port of openai/triton python/tutorials/06-fused-attention.py _attn_fwd and _attn_fwd_inner (query and key blocks, exp2 with qk_scale = sm_scale * log2(e), running m_i and l_i, acc rescaled by alpha, the diagonal block masked with -1e6), in PyTorch"""
import torch


def flash_attention(queries, keys, values, block_size=64, causal=False):
    Tq, d = queries.shape[-2], queries.shape[-1]
    Tk = keys.shape[-2]
    BLOCK_M = BLOCK_N = block_size
    sm_scale = d ** -0.5
    qk_scale = sm_scale * 1.44269504  # 1/log(2)
    outs = []
    for start_m in range(0, Tq, BLOCK_M):
        q = queries[..., start_m:start_m + BLOCK_M, :]
        bm = q.shape[-2]
        offs_m = torch.arange(start_m, start_m + bm, device=q.device)
        m_i = torch.full(q.shape[:-1], float("-inf"), dtype=q.dtype, device=q.device)
        l_i = torch.zeros(q.shape[:-1], dtype=q.dtype, device=q.device) + 1.0
        acc = torch.zeros(q.shape[:-1] + (values.shape[-1],), dtype=q.dtype, device=q.device)
        # STAGE 1 (off-band) covers keys before the query block, STAGE 2 the diagonal block
        hi = min(Tk, start_m + bm) if causal else Tk
        for start_n in range(0, hi, BLOCK_N):
            k = keys[..., start_n:start_n + BLOCK_N, :]
            v = values[..., start_n:start_n + BLOCK_N, :]
            qk = q @ k.transpose(-2, -1)
            offs_n = torch.arange(start_n, start_n + k.shape[-2], device=q.device)
            if causal and start_n + k.shape[-2] - 1 > start_m:
                mask = offs_m[:, None] >= offs_n[None, :]
                qk = qk * qk_scale + torch.where(mask, 0.0, -1.0e6).to(qk.dtype)
                m_ij = torch.maximum(m_i, qk.amax(-1))
                qk = qk - m_ij[..., None]
            else:
                m_ij = torch.maximum(m_i, qk.amax(-1) * qk_scale)
                qk = qk * qk_scale - m_ij[..., None]
            p = torch.exp2(qk)
            l_ij = p.sum(-1)
            alpha = torch.exp2(m_i - m_ij)
            l_i = l_i * alpha + l_ij
            acc = acc * alpha[..., None]
            acc = acc + p @ v
            m_i = m_ij
        outs.append(acc / l_i[..., None])
    return torch.cat(outs, dim=-2)
