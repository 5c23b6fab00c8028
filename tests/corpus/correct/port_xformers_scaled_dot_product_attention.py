"""scaled_dot_product_attention: port of facebookresearch/xformers tests/test_splitk_reference.py ref_attention_splitk with split_k=1 (the probabilities @ v, over its additive-bias softmax beside it)"""
import torch


def _bias(mask, shape, dtype, device):
    # xformers materialises masks as an additive bias: 0 where visible, -inf where hidden
    bias = torch.zeros(shape, dtype=dtype, device=device)
    if mask is not None:
        bias = bias.masked_fill(torch.broadcast_to(mask, shape), float("-inf"))
    return bias


def attention_weights(queries, keys, mask=None):
    scale = queries.shape[-1] ** -0.5
    q = queries * scale
    p = q @ keys.transpose(-2, -1)
    p = p + _bias(mask, p.shape, p.dtype, p.device)
    row_max = torch.max(p, dim=-1, keepdim=True).values
    row_max = torch.where(torch.isneginf(row_max), torch.zeros_like(row_max), row_max)
    s = torch.exp(p - row_max)
    row_sumexp = torch.sum(s, dim=-1, keepdim=True)
    return s / torch.where(row_sumexp == 0, torch.ones_like(row_sumexp), row_sumexp)


def scaled_dot_product_attention(queries, keys, values, mask=None):
    return attention_weights(queries, keys, mask) @ values
