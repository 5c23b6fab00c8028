"""flash_attention: port of facebookresearch/xformers tests/test_splitk_reference.py ref_attention_splitk (keys in slices, each slice's row max, exp, sum and s @ v merged with alpha = exp(-|local_max - global_max|) and pick_new as it is computed; queries tiled too)"""
import torch


def _merge(out, sumexp, gmax, local_out, local_sumexp, local_max):
    log_alpha = -torch.abs(local_max - gmax)
    alpha = torch.exp(log_alpha).nan_to_num(1.0)
    pick_new = local_max < gmax
    new_coef = torch.where(pick_new, alpha, torch.ones_like(alpha))
    curr_coef = torch.where(pick_new, torch.ones_like(alpha), alpha)
    out = out * curr_coef + local_out * new_coef
    sumexp = sumexp * curr_coef + local_sumexp * new_coef
    return out, sumexp, torch.maximum(local_max, gmax)


def flash_attention(queries, keys, values, block_size=64, causal=False):
    scale = queries.shape[-1] ** -0.5
    Tq, Tk = queries.shape[-2], keys.shape[-2]
    rows = []
    for qs in range(0, Tq, block_size):
        q = queries[..., qs:qs + block_size, :] * scale
        bq = q.shape[-2]
        out = torch.zeros(q.shape[:-1] + (values.shape[-1],), dtype=q.dtype, device=q.device)
        gsum = torch.zeros(q.shape[:-1] + (1,), dtype=q.dtype, device=q.device)
        gmax = torch.full(q.shape[:-1] + (1,), float("-inf"), dtype=q.dtype, device=q.device)
        for ks in range(0, Tk, block_size):
            k = keys[..., ks:ks + block_size, :]
            v = values[..., ks:ks + block_size, :]
            p = q @ k.transpose(-2, -1)
            if causal:
                qi = torch.arange(qs, qs + bq, device=q.device)[:, None]
                kj = torch.arange(ks, ks + k.shape[-2], device=q.device)[None, :]
                p = p.masked_fill(kj > qi, float("-inf"))  # the bias of LowerTriangularMask
            row_max = torch.max(p, dim=-1, keepdim=True).values.detach()
            scaled = p - row_max
            scaled = torch.where(scaled.isnan(), torch.full_like(scaled, float("-inf")), scaled)
            s = torch.exp(scaled)
            out, gsum, gmax = _merge(out, gsum, gmax, s @ v, s.sum(-1, keepdim=True), row_max)
        rows.append(out / gsum)
    return torch.cat(rows, dim=-2)
