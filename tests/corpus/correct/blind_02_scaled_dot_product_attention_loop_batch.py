"""scaled_dot_product_attention: Broadcasts and flattens the leading dims, then a private 2-D helper attends one sequence/head at a time (k.T, masked_fill -inf with all-hidden rows set to 0 then zeroed) and the results are stacked and reshaped back. (written blind, from the contract alone)."""
import math

import torch


def _one_sequence(q, k, v, hidden):
    """Attention for one [Tq, d] / [Tk, d] / [Tk, dv] triple; hidden is a bool [Tq, Tk] or None."""
    scores = q @ k.T / math.sqrt(k.shape[1])
    if hidden is not None:
        scores = scores.masked_fill(hidden, float("-inf"))
        fully_hidden = hidden.all(dim=1, keepdim=True)
        scores = scores.masked_fill(fully_hidden, 0.0)
    weights = scores.softmax(dim=1)
    if hidden is not None:
        weights = weights.masked_fill(fully_hidden, 0.0)
    return weights @ v


def scaled_dot_product_attention(queries, keys, values, mask=None):
    """Flatten the leading batch dimensions and attend one sequence (or head) at a time."""
    Tq, Tk = queries.shape[-2], keys.shape[-2]
    shapes = [queries.shape[:-2], keys.shape[:-2], values.shape[:-2]]
    if mask is not None:
        mask = mask.to(device=queries.device, dtype=torch.bool)
        if mask.dim() >= 2:
            shapes.append(mask.shape[:-2])
    batch = torch.broadcast_shapes(*shapes)
    q = queries.expand(*batch, Tq, queries.shape[-1]).reshape(-1, Tq, queries.shape[-1])
    k = keys.expand(*batch, Tk, keys.shape[-1]).reshape(-1, Tk, keys.shape[-1])
    v = values.expand(*batch, Tk, values.shape[-1]).reshape(-1, Tk, values.shape[-1])
    m = None if mask is None else mask.expand(*batch, Tq, Tk).reshape(-1, Tq, Tk)
    outs = [_one_sequence(q[n], k[n], v[n], None if m is None else m[n]) for n in range(q.shape[0])]
    if outs:
        out = torch.stack(outs)
    else:  # an empty batch
        out = queries.new_zeros(0, Tq, values.shape[-1])
    return out.reshape(*batch, Tq, values.shape[-1])
