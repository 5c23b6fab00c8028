"""attention_weights: masked_fill(-inf) then softmax, with nothing for fully masked rows: a query whose keys are all
hidden gets NaN weights (and NaN gradients) instead of zeros.

Source: the reference implementation in torch.nn.functional.scaled_dot_product_attention's documentation
("Efficient implementation equivalent to the following": attn_bias.masked_fill_(attn_mask.logical_not(), -inf);
attn_weight = query @ key.transpose(-2, -1) * scale_factor; attn_weight += attn_bias; softmax(dim=-1)).
Bug reports: https://github.com/pytorch/pytorch/issues/41508, https://github.com/pytorch/pytorch/issues/103749
(SDPA produces NaN with a fully masked padding row; fixed by _safe_softmax in PR #133882).
Port: the documented function up to the softmax, with the course's mask (True = hidden, so no logical_not).
"""
import math

import torch


def attention_weights(queries, keys, mask=None):
    query, key = queries, keys
    L, S = query.size(-2), key.size(-2)
    scale_factor = 1 / math.sqrt(query.size(-1))
    attn_bias = torch.zeros(L, S, dtype=query.dtype, device=query.device)
    if mask is not None:
        attn_bias = attn_bias.masked_fill(mask, float("-inf"))
    attn_weight = query @ key.transpose(-2, -1) * scale_factor
    attn_weight = attn_weight + attn_bias
    attn_weight = torch.softmax(attn_weight, dim=-1)
    return attn_weight
