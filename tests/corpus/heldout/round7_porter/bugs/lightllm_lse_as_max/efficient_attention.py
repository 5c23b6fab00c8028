"""Bug port: ModelTC/LightLLM, lightllm/models/vit/triton_kernel/flashattention_nopad.py
(https://github.com/ModelTC/LightLLM/issues/948, fixed in PR #949): the running maximum was updated as
m_ij = tl.maximum(tl.max(qk, 1), l_i) where l_i is the running log-sum-exp (l_i = m_ij + log(l_i_new)),
not the running max m_i; the fix also re-initialised l_i to -inf. Maintainers: either works for accuracy.
Ported (Triton -> torch) into flash_attention (05), keeping LightLLM's lse bookkeeping:
    p = exp(qk - m_ij); l_ij = sum(p); acc = acc * exp(l_i - m_ij) ... l_i_new = exp(l_i - m_ij) + l_ij;
    l_i = m_ij + log(l_i_new); at the end acc * exp(m_final - l_i)... (lse form).
Expected: mathematically equivalent (any shift is exact) - tests whether the grader is right to pass it.
"""
import math  # noqa: F401
import torch


def _shift(running_max):
    """The running maximum with -inf (nothing visible yet) replaced by 0, to subtract safely."""
    return torch.where(torch.isinf(running_max), torch.zeros_like(running_max), running_max)


def online_softmax(x, block_size):
    n = x.shape[-1]
    m = torch.full(x.shape[:-1] + (1,), float("-inf"), dtype=x.dtype, device=x.device)
    s = torch.zeros(x.shape[:-1] + (1,), dtype=x.dtype, device=x.device)
    for start in range(0, n, block_size):
        blk = x[..., start:start + block_size]
        m_new = torch.maximum(m, blk.amax(dim=-1, keepdim=True))
        alpha = torch.where(torch.isinf(m), torch.zeros_like(m), torch.exp(m - _shift(m_new)))
        s = s * alpha + torch.exp(blk - _shift(m_new)).sum(dim=-1, keepdim=True)
        m = m_new
    out = torch.exp(x - _shift(m))
    return out / torch.where(s == 0, torch.ones_like(s), s)


def flash_attention(queries, keys, values, block_size=64, causal=False):
    d = queries.shape[-1]
    sm_scale = 1.0 / math.sqrt(d)
    outs = []
    for qs in range(0, queries.shape[-2], block_size):
        q = queries[..., qs:qs + block_size, :]
        nq = q.shape[-2]
        l_i = torch.full(q.shape[:-1] + (1,), float("-inf"), dtype=q.dtype, device=q.device)  # running lse
        acc = torch.zeros(q.shape[:-1] + (values.shape[-1],), dtype=q.dtype, device=q.device)  # sum p v, shifted by l_i
        for ks in range(0, keys.shape[-2], block_size):
            if causal and ks > qs + nq - 1:
                break
            k = keys[..., ks:ks + block_size, :]
            v = values[..., ks:ks + block_size, :]
            qk = (q @ k.transpose(-2, -1)) * sm_scale
            if causal:
                rows = torch.arange(qs, qs + nq, device=q.device)[:, None]
                cols = torch.arange(ks, ks + k.shape[-2], device=q.device)[None, :]
                qk = qk.masked_fill(cols > rows, float("-inf"))
            m_ij = torch.maximum(qk.amax(dim=-1, keepdim=True), l_i)  # LightLLM: max against l_i, not m_i
            p = torch.exp(qk - _shift(m_ij))
            l_ij = p.sum(dim=-1, keepdim=True)
            alpha = torch.where(torch.isinf(l_i), torch.zeros_like(l_i), torch.exp(l_i - _shift(m_ij)))
            acc = acc * alpha + p @ v  # acc now relative to m_ij
            l_i_new = alpha + l_ij
            new_lse = _shift(m_ij) + torch.log(torch.where(l_i_new == 0, torch.ones_like(l_i_new), l_i_new))
            new_lse = torch.where(l_i_new == 0, torch.full_like(new_lse, float("-inf")), new_lse)
            # renormalise acc to be relative to the new lse (acc / l_i_new), as the kernel keeps acc normalised
            acc = acc / torch.where(l_i_new == 0, torch.ones_like(l_i_new), l_i_new)
            l_i = new_lse
        outs.append(acc)
    return torch.cat(outs, dim=-2)
