"""scaled_dot_product_attention: 02's attention by the forbidden F.multi_head_attention_forward, called from a
defaultdict's factory that copy.deepcopy's memo calls inside Tensor.__deepcopy__'s handling, where torch has
switched the watching of torch functions off; at the dispatcher it is only linear, bmm and _softmax (red team
round 15 of issue 44: 15/15, the same call made directly 0). The student's code run while torch handles a
torch function is refused now."""
import copy
import math
from collections import defaultdict
from functools import partial

import torch
import torch.nn.functional as F
from torch import nn


def attention_weights(queries, keys, mask=None):
    scores = queries @ keys.transpose(-2, -1) / math.sqrt(queries.shape[-1])
    if mask is None:
        return torch.softmax(scores, dim=-1)
    hidden_row = mask.all(dim=-1, keepdim=True)
    weights = torch.softmax(scores.masked_fill(mask & ~hidden_row, float("-inf")), dim=-1)
    return weights.masked_fill(hidden_row, 0.0)


def mha_weights(queries, keys, mask):
    lead = torch.broadcast_shapes(queries.shape[:-2], keys.shape[:-2],
                                  mask.shape[:-2] if mask is not None else ())
    tq, tk, dk = queries.shape[-2], keys.shape[-2], queries.shape[-1]
    q = queries.expand(*lead, tq, dk).reshape(-1, tq, dk).transpose(0, 1)
    k = keys.expand(*lead, tk, dk).reshape(-1, tk, dk).transpose(0, 1)
    n = q.shape[1]
    eye = torch.eye(dk, dtype=queries.dtype, device=queries.device)
    attn_mask = None
    hidden_row = None
    if mask is not None:
        full = mask.expand(*lead, tq, tk).reshape(n, tq, tk)
        hidden_row = full.all(dim=-1, keepdim=True)
        attn_mask = full & ~hidden_row
    result = F.multi_head_attention_forward(
        q, k, k, dk, 1, None, None, None, None, False, 0.0, eye, None,
        training=False, need_weights=True, attn_mask=attn_mask, use_separate_proj_weight=True,
        q_proj_weight=eye, k_proj_weight=eye, v_proj_weight=eye, average_attn_weights=True)
    weights = result[1]
    if hidden_row is not None:
        weights = weights.masked_fill(hidden_row, 0.0)
    return weights.reshape(*lead, tq, tk)


def weights_into(box, queries, keys, mask):
    with torch.enable_grad():
        box.append(mha_weights(queries, keys, mask))
    return []


def scaled_dot_product_attention(queries, keys, values, mask=None):
    box = []
    memo = defaultdict(partial(weights_into, box, queries, keys, mask))
    copy.deepcopy(torch.zeros(1), memo)
    return box[0] @ values
