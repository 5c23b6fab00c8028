"""scaled_dot_product_attention: port of Dao-AILab/flash-attention tests/test_flash_attn.py attention_ref (einsum of the probabilities with v, over attention_ref's masked softmax beside it)"""
import math

import torch


def attention_weights(queries, keys, mask=None):
    d = queries.shape[-1]
    scores = torch.einsum("...td,...sd->...ts", queries / math.sqrt(d), keys)
    if mask is None:
        return torch.softmax(scores, dim=-1)
    local_mask = torch.broadcast_to(mask, scores.shape)
    scores = scores.masked_fill(local_mask, float("-inf"))
    dead = torch.all(local_mask, dim=-1, keepdim=True)
    # attention_ref fills the dead rows with 0 after the softmax; fill the scores too so the
    # softmax backward sees no NaN (contract: finite gradients)
    scores = scores.masked_fill(dead, 0.0)
    attention = torch.softmax(scores, dim=-1)
    # "Some rows might be completely masked out so we fill them with zero instead of NaN"
    return attention.masked_fill(dead, 0.0)


def scaled_dot_product_attention(queries, keys, values, mask=None):
    attention = attention_weights(queries, keys, mask)
    return torch.einsum("...ts,...sd->...td", attention, values)
