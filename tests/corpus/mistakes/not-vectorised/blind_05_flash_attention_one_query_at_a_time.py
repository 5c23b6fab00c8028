"""flash_attention: online softmax over key blocks, but a Python loop over every single query row."""
import math
import torch


def flash_attention(queries, keys, values, block_size=64, causal=False):
    Tq, Tk = queries.shape[-2], keys.shape[-2]
    scale = 1.0 / math.sqrt(queries.shape[-1])
    rows = []
    for i in range(Tq):
        q = queries[..., i:i + 1, :]
        m = l = acc = None
        k_stop = min(Tk, i + 1) if causal else Tk
        for ks in range(0, k_stop, block_size):
            ke = min(ks + block_size, k_stop)
            s = q @ keys[..., ks:ke, :].transpose(-1, -2) * scale
            blk_max = s.amax(-1, keepdim=True)
            m_new = blk_max if m is None else torch.maximum(m, blk_max)
            p = torch.exp(s - m_new)
            if m is None:
                l = p.sum(-1, keepdim=True)
                acc = p @ values[..., ks:ke, :]
            else:
                alpha = torch.exp(m - m_new)
                l = alpha * l + p.sum(-1, keepdim=True)
                acc = alpha * acc + p @ values[..., ks:ke, :]
            m = m_new
        rows.append(acc / l)
    return torch.cat(rows, dim=-2)
