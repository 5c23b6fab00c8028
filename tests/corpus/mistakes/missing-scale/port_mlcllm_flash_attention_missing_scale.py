"""flash_attention: mlc-llm's attention fallback called the prefill kernel with the default sm_scale=1.0, so the scores are never scaled by 1/sqrt(head_dim) (https://github.com/mlc-ai/mlc-llm/pull/3426)"""
import torch


def flash_attention(queries, keys, values, block_size=64, causal=False):
    sm_scale = 1.0  # the bug: should be d ** -0.5
    Tq, Tk = queries.shape[-2], keys.shape[-2]
    outs = []
    for qs in range(0, Tq, block_size):
        q = queries[..., qs:qs + block_size, :]
        m = torch.full(q.shape[:-1], float("-inf"), dtype=q.dtype, device=q.device)
        l = torch.zeros(q.shape[:-1], dtype=q.dtype, device=q.device)
        acc = torch.zeros(q.shape[:-1] + (values.shape[-1],), dtype=q.dtype, device=q.device)
        hi = min(Tk, qs + q.shape[-2]) if causal else Tk
        for ks in range(0, hi, block_size):
            s = (q @ keys[..., ks:ks + block_size, :].transpose(-2, -1)) * sm_scale
            if causal:
                r = torch.arange(qs, qs + q.shape[-2], device=q.device)[:, None]
                c = torch.arange(ks, ks + s.shape[-1], device=q.device)[None, :]
                s = s.masked_fill(c > r, float("-inf"))
            m_new = torch.maximum(m, s.amax(-1).detach())
            p = torch.exp(s - m_new[..., None])
            alpha = torch.exp(m - m_new)
            l = l * alpha + p.sum(-1)
            acc = acc * alpha[..., None] + p @ values[..., ks:ks + block_size, :]
            m = m_new
        outs.append(acc / l[..., None])
    return torch.cat(outs, dim=-2)
