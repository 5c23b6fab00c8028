"""scaled_dot_product_attention: 02's attention by the forbidden F.scaled_dot_product_attention, called from
the __iter__ of an object given to F.unfold as its kernel size: torch's own _pair iterates it inside unfold's
handling, where the watching of torch functions is off, and on inputs that are not 4-d SDPA's math path reaches
the dispatcher as matmul and _safe_softmax (red team round 13 of issue 44, A4: 100/100, the same call made
directly 85). Not observed now (the file defines __iter__), and refused at the dispatcher (_safe_softmax)."""
import math

import torch
from torch import nn
import torch.nn.functional as F


def attention_weights(queries, keys, mask=None):
    scores = queries @ keys.transpose(-2, -1) / math.sqrt(keys.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    m = scores.amax(dim=-1, keepdim=True)
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    e = torch.exp(scores - m)
    s = e.sum(dim=-1, keepdim=True)
    return torch.where(s > 0, e / torch.where(s > 0, s, torch.ones_like(s)), torch.zeros_like(e))



def fused(queries, keys, values, mask):
    lead = torch.broadcast_shapes(queries.shape[:-2], keys.shape[:-2], values.shape[:-2],
                                  () if mask is None else mask.shape[:-2])
    tq, tk = queries.shape[-2], keys.shape[-2]
    q = queries.expand(*lead, *queries.shape[-2:]).reshape(-1, *queries.shape[-2:])
    k = keys.expand(*lead, *keys.shape[-2:]).reshape(-1, *keys.shape[-2:])
    v = values.expand(*lead, *values.shape[-2:]).reshape(-1, *values.shape[-2:])
    keep = None
    if mask is not None:
        keep = torch.logical_not(mask).expand(*lead, tq, tk).reshape(-1, tq, tk)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
    return out.reshape(*lead, tq, values.shape[-1])


class Kernel:
    def __init__(self, args):
        self.args = args
        self.box = []

    def __iter__(self):
        self.box.append(fused(*self.args))
        return iter((1, 1))


def scaled_dot_product_attention(queries, keys, values, mask=None):
    kernel = Kernel((queries, keys, values, mask))
    F.unfold(torch.zeros(1, 1, 1, 1), kernel)
    return kernel.box[-1]


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q, k, v = x @ self.W_query, x @ self.W_key, x @ self.W_value
        return scaled_dot_product_attention(q, k, v)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        return scaled_dot_product_attention(self.W_query(x), self.W_key(x), self.W_value(x))


def copy_v2_weights_into_v1(v2, v1):
    if v2.W_query.bias is not None:
        raise ValueError("v2 has biases; v1 has none")
    with torch.no_grad():
        v1.W_query.copy_(v2.W_query.weight.T)
        v1.W_key.copy_(v2.W_key.weight.T)
        v1.W_value.copy_(v2.W_value.weight.T)
    return None


class CrossAttention(nn.Module):
    def __init__(self, d_in_q, d_in_kv, d_k, d_v, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in_q, d_k, bias=qkv_bias)
        self.W_key = nn.Linear(d_in_kv, d_k, bias=qkv_bias)
        self.W_value = nn.Linear(d_in_kv, d_v, bias=qkv_bias)

    def forward(self, x_q, x_kv):
        return scaled_dot_product_attention(self.W_query(x_q), self.W_key(x_kv), self.W_value(x_kv))
