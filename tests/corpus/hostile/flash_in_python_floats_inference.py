"""flash_attention: 05's attention computed in Python floats, every value read with float() under
torch.inference_mode, where each read shows as item, not _local_scalar_dense, so that no value read into
Python was counted (red team round 11 of issue 44, A3: 94.36 against 74.36 for the same reads counted).
Not observed now, and refused where it runs."""
import math
import torch


def plain_softmax(s):
    m = s.amax(dim=-1, keepdim=True)
    m = torch.where(torch.isinf(m), torch.zeros_like(m), m)
    e = torch.exp(s - m)
    total = e.sum(dim=-1, keepdim=True)
    return torch.where(total > 0, e / torch.where(total > 0, total, torch.ones_like(total)), torch.zeros_like(e))


def online_softmax(x, block_size):
    return plain_softmax(x)


def as_lists(t):
    rows = t.reshape(-1, t.shape[-1])
    return [[float(v) for v in row] for row in rows]


def python_attention(q, k, v, causal):
    tq, tk, d = q.shape[-2], k.shape[-2], q.shape[-1]
    scale = 1.0 / math.sqrt(d)
    batches = q.numel() // (tq * d)
    ql, kl, vl = as_lists(q), as_lists(k), as_lists(v)
    out = []
    for b in range(batches):
        for i in range(tq):
            qi = ql[b * tq + i]
            scores = []
            for j in range(tk):
                if causal and j > i:
                    break
                kj = kl[b * tk + j]
                scores.append(scale * sum(a * c for a, c in zip(qi, kj)))
            if not scores:
                out.append([0.0] * v.shape[-1])
                continue
            top = max(scores)
            weights = [math.exp(s - top) for s in scores]
            total = sum(weights)
            row = [0.0] * v.shape[-1]
            for j, w in enumerate(weights):
                vj = vl[b * tk + j]
                for c in range(len(row)):
                    row[c] += w * vj[c]
            out.append([r / total for r in row])
    return torch.tensor(out, dtype=q.dtype).reshape(*q.shape[:-1], v.shape[-1])


def flash_attention(queries, keys, values, block_size=64, causal=False):
    if queries.requires_grad or keys.requires_grad or values.requires_grad:
        tq, tk = queries.shape[-2], keys.shape[-2]
        s = queries @ keys.transpose(-2, -1) / math.sqrt(queries.shape[-1])
        if causal:
            s = s.masked_fill(torch.ones(tq, tk, dtype=torch.bool, device=s.device).triu(1), float("-inf"))
        return plain_softmax(s) @ values
    with torch.inference_mode():
        out = python_attention(queries, keys, values, causal)
    return out.clone()
