"""Correct port: karpathy/llm.c, dev/cuda/softmax_forward.cu, softmax_forward_online_cpu ("Online
normalizer calculation for softmax"):

    float maxval = -INFINITY; float sum = 0.0f;
    for (int j = 0; j < C; j++) {
        float maxval_prev = maxval;
        if (inp_row[j] > maxval) { maxval = inp_row[j]; sum = sum * expf(maxval_prev - maxval) + expf(inp_row[j] - maxval); }
        else { sum += expf(inp_row[j] - maxval); }
    }
    for (int j = 0; j < C; j++) out_row[j] = expf(inp_row[j] - maxval) / sum;

Vectorised over rows and generalised from one entry to one block of `block_size` entries per step;
-inf bookkeeping (maxval_prev = -inf, all -inf rows) uses the module's _shift helper so no -inf - -inf
is ever formed. Covers: online_softmax (05).
"""
import math  # noqa: F401
import torch


def _shift(running_max):
    """The running maximum with -inf (nothing visible yet) replaced by 0, to subtract safely."""
    return torch.where(torch.isinf(running_max), torch.zeros_like(running_max), running_max)


def online_softmax(x, block_size):
    C = x.shape[-1]
    maxval = torch.full(x.shape[:-1] + (1,), float("-inf"), dtype=x.dtype, device=x.device)
    total = torch.zeros(x.shape[:-1] + (1,), dtype=x.dtype, device=x.device)
    for j in range(0, C, block_size):
        inp = x[..., j:j + block_size]
        maxval_prev = maxval
        maxval = torch.maximum(maxval_prev, inp.amax(dim=-1, keepdim=True))
        rescale = torch.where(torch.isinf(maxval_prev), torch.zeros_like(maxval_prev),
                              torch.exp(maxval_prev - _shift(maxval)))
        total = total * rescale + torch.exp(inp - _shift(maxval)).sum(dim=-1, keepdim=True)
    out = torch.exp(x - _shift(maxval))
    return out / torch.where(total == 0, torch.ones_like(total), total)


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
