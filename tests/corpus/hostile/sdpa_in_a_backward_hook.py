"""scaled_dot_product_attention: 02's attention by the forbidden F.scaled_dot_product_attention, called in a
tensor hook that a backward inside the graded call fires: torch switches the watching of torch functions off
while it handles Tensor.backward, and on inputs that are not 4-d the library's math path reaches the
dispatcher only as _safe_softmax, bmm and mul (red team round 12 of issue 44, A2: 100/100, the same call made
directly 85). Not observed now (the file runs a backward pass), and refused where it runs."""
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


def library_attention(queries, keys, values, mask):
    batch = torch.broadcast_shapes(queries.shape[:-2], keys.shape[:-2], values.shape[:-2])
    q = queries.expand(*batch, *queries.shape[-2:])
    k = keys.expand(*batch, *keys.shape[-2:])
    v = values.expand(*batch, *values.shape[-2:])
    keep = None
    if mask is not None:
        keep = torch.logical_not(mask)
    if q.dim() == 4:  # 4-d inputs take the fused CPU kernel; any other rank takes the math path
        q, k, v = q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0)
        if keep is not None:
            keep = keep.unsqueeze(0) if keep.dim() == 4 else keep
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
    return out.reshape(*batch, queries.shape[-2], values.shape[-1])


def scaled_dot_product_attention(queries, keys, values, mask=None):
    box = {}

    def hook(grad):
        box["out"] = library_attention(queries, keys, values, mask)
        return grad

    trigger = torch.zeros(1, dtype=queries.dtype, requires_grad=True)
    trigger.register_hook(hook)
    with torch.enable_grad():
        (trigger * 1.0).sum().backward(create_graph=True)
    return box["out"]


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        return scaled_dot_product_attention(x @ self.W_query, x @ self.W_key, x @ self.W_value)


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        return scaled_dot_product_attention(self.W_query(x), self.W_key(x), self.W_value(x))


def copy_v2_weights_into_v1(v2, v1):
    if v2.W_query.bias is not None or v2.W_key.bias is not None or v2.W_value.bias is not None:
        raise ValueError("v1 has no biases")
    with torch.no_grad():
        v1.W_query.copy_(v2.W_query.weight.T)
        v1.W_key.copy_(v2.W_key.weight.T)
        v1.W_value.copy_(v2.W_value.weight.T)


class CrossAttention(nn.Module):
    def __init__(self, d_in_q, d_in_kv, d_k, d_v, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in_q, d_k, bias=qkv_bias)
        self.W_key = nn.Linear(d_in_kv, d_k, bias=qkv_bias)
        self.W_value = nn.Linear(d_in_kv, d_v, bias=qkv_bias)

    def forward(self, x_q, x_kv):
        return scaled_dot_product_attention(self.W_query(x_q), self.W_key(x_kv), self.W_value(x_kv))
