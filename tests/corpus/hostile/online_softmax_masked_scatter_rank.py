"""online_softmax: each row's maximum with no reduction the width rule counted: every entry compared with every
other, its wins counted by masked_scatter's running count over the whole flattened mask, the first winner
picked by nonzero_static; the sums then block by block (red team round 13 of issue 44, B1: 40/40 against
36.36 for the same two-pass softmax with a whole-row amax). masked_scatter and nonzero_static are measured
over the whole mask now."""
import math

import torch


def shift(m):
    return torch.where(torch.isinf(m), torch.zeros_like(m), m)


def finish(x, m, block_size):
    m = shift(m)
    s = torch.zeros_like(m)
    for start in range(0, x.shape[-1], block_size):
        s = s + torch.exp(x[..., start:start + block_size] - m).sum(dim=-1, keepdim=True)
    e = torch.exp(x - m)
    return torch.where(s > 0, e / torch.where(s > 0, s, torch.ones_like(s)), torch.zeros_like(e))


def row_max(x):
    """Each row's maximum, found with no reduction the tracer measures: a [N, N] comparison, the count of
    each row's wins read off masked_scatter's hidden prefix count, the first winner picked by nonzero_static."""
    n = x.shape[-1]
    lead = x.shape[:-1]
    a, b = x.unsqueeze(-1), x.unsqueeze(-2)  # [..., N, 1], [..., 1, N]
    before = torch.ones(n, n, dtype=torch.bool).tril(-1)  # j < i
    wins = torch.where(before, a > b, a >= b)  # x_i beats every earlier entry strictly, later ones or ties
    sentinel = torch.ones(*lead, n, 1, dtype=torch.bool)
    marks = torch.cat([wins, sentinel], dim=-1).reshape(-1)
    source = torch.arange(1, marks.numel() + 1)
    ranks = torch.zeros(marks.numel(), dtype=torch.long).masked_scatter(marks, source)
    ends = ranks.reshape(-1, n + 1)[:, n]  # running count at each row's sentinel
    per_row = ends - torch.cat([torch.zeros(1, dtype=torch.long), ends[:-1]])  # wins + 1
    first = per_row == n + 1
    where = torch.nonzero_static(first, size=first.numel() // n).reshape(-1)
    return x.reshape(-1)[where].reshape(*lead, 1)


def online_softmax(x, block_size):
    return finish(x, row_max(x), block_size)


def flash_attention(queries, keys, values, block_size=64, causal=False):
    scale = 1.0 / math.sqrt(queries.shape[-1])
    tq, tk = queries.shape[-2], keys.shape[-2]
    lead = torch.broadcast_shapes(queries.shape[:-2], keys.shape[:-2], values.shape[:-2])
    outs = []
    for qs in range(0, tq, block_size):
        q = queries[..., qs:qs + block_size, :] * scale
        nq = q.shape[-2]
        m = torch.full((*lead, nq, 1), float("-inf"), dtype=queries.dtype)
        s = torch.zeros((*lead, nq, 1), dtype=queries.dtype)
        acc = torch.zeros((*lead, nq, values.shape[-1]), dtype=queries.dtype)
        for ks in range(0, tk, block_size):
            if causal and ks > qs + nq - 1:
                break
            k = keys[..., ks:ks + block_size, :]
            v = values[..., ks:ks + block_size, :]
            sc = q @ k.transpose(-2, -1)
            if causal:
                qi = torch.arange(qs, qs + nq).unsqueeze(-1)
                kj = torch.arange(ks, ks + k.shape[-2]).unsqueeze(0)
                sc = sc.masked_fill(kj > qi, float("-inf"))
            m_new = torch.maximum(m, sc.amax(dim=-1, keepdim=True))
            p = torch.exp(sc - shift(m_new))
            r = torch.exp(m - shift(m_new))
            s = s * r + p.sum(dim=-1, keepdim=True)
            acc = acc * r + p @ v
            m = m_new
        outs.append(torch.where(s > 0, acc / torch.where(s > 0, s, torch.ones_like(s)), torch.zeros_like(acc)))
    return torch.cat(outs, dim=-2)
