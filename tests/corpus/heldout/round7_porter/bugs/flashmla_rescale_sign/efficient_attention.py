"""Bug port: deepseek-ai/FlashMLA, docs/20250422-new-kernel-deep-dive.md online-softmax rescaling
(https://github.com/deepseek-ai/FlashMLA/pull/177 "fix sign of online softmax rescaling factors": "the
factor should be exp(m_old - m_new) rather than exp(m_new - m_old)"). Implemented as the doc wrote it,
in online_softmax (05): when the running max grows, the running sum is multiplied by exp(m_new - m_old).
"""
import math  # noqa: F401
import torch


def _shift(running_max):
    """The running maximum with -inf (nothing visible yet) replaced by 0, to subtract safely."""
    return torch.where(torch.isinf(running_max), torch.zeros_like(running_max), running_max)


def online_softmax(x, block_size):
    m = torch.full(x.shape[:-1] + (1,), float("-inf"), dtype=x.dtype, device=x.device)
    s = torch.zeros(x.shape[:-1] + (1,), dtype=x.dtype, device=x.device)
    for start in range(0, x.shape[-1], block_size):
        blk = x[..., start:start + block_size]
        m_new = torch.maximum(m, blk.amax(dim=-1, keepdim=True))
        scale = torch.where(torch.isinf(m), torch.zeros_like(m), torch.exp(_shift(m_new) - m))  # bug: sign
        s = s * scale + torch.exp(blk - _shift(m_new)).sum(dim=-1, keepdim=True)
        m = m_new
    return torch.exp(x - _shift(m)) / torch.where(s == 0, torch.ones_like(s), s)


def flash_attention(queries, keys, values, block_size=64, causal=False):
    tq, d = queries.shape[-2], queries.shape[-1]
    tk = keys.shape[-2]
    scale = 1.0 / math.sqrt(d)
    outs = []
    for qs in range(0, tq, block_size):
        q = queries[..., qs:qs + block_size, :]
        nq = q.shape[-2]
        m = torch.full(q.shape[:-1] + (1,), float("-inf"), dtype=q.dtype, device=q.device)
        l = torch.zeros(q.shape[:-1] + (1,), dtype=q.dtype, device=q.device)
        acc = torch.zeros(q.shape[:-1] + (values.shape[-1],), dtype=q.dtype, device=q.device)
        for ks in range(0, tk, block_size):
            if causal and ks > qs + nq - 1:
                break
            k = keys[..., ks:ks + block_size, :]
            v = values[..., ks:ks + block_size, :]
            s = (q @ k.transpose(-2, -1)) * scale
            if causal:
                qi = torch.arange(qs, qs + nq, device=q.device)[:, None]
                kj = torch.arange(ks, ks + k.shape[-2], device=q.device)[None, :]
                s = s.masked_fill(kj > qi, float("-inf"))
            m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
            p = torch.exp(s - _shift(m_new))
            alpha = torch.where(torch.isinf(m), torch.zeros_like(m), torch.exp(m - _shift(m_new)))
            l = l * alpha + p.sum(dim=-1, keepdim=True)
            acc = acc * alpha + p @ v
            m = m_new
        outs.append(acc / torch.where(l == 0, torch.ones_like(l), l))
    return torch.cat(outs, dim=-2)
