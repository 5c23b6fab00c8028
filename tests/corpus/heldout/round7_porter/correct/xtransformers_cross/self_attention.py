"""Correct port: lucidrains/x-transformers, x_transformers/x_transformers.py, Attention.forward with
`context` (cross-attention) and x_transformers/attend.py Attend.forward (non-flash path):

    kv_input = default(context, x); q_input = x
    q = self.to_q(q_input); k = self.to_k(kv_input); v = self.to_v(kv_input)
    scale = default(self.scale, q.shape[-1] ** -0.5)
    sim = einsum('b h i d, b h j d -> b h i j', q, k) * scale
    attn = sim.softmax(dim = -1); out = einsum('b h i j, b h j d -> b h i d', attn, v)

One head (the course's CrossAttention), to_q/to_k/to_v renamed W_query/W_key/W_value; einsum over any
leading dims. Covers: CrossAttention (02).
"""
import math

import torch
from torch import nn


def attention_weights(queries, keys, mask=None):
    scores = queries @ keys.transpose(-2, -1) / math.sqrt(keys.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    m = scores.amax(dim=-1, keepdim=True)
    m = torch.where(torch.isinf(m), torch.zeros_like(m), m).detach()
    e = torch.exp(scores - m)
    s = e.sum(dim=-1, keepdim=True)
    return e / torch.where(s == 0, torch.ones_like(s), s)


def scaled_dot_product_attention(queries, keys, values, mask=None):
    return attention_weights(queries, keys, mask) @ values


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q, k, v = x @ self.W_query, x @ self.W_key, x @ self.W_value
        w = torch.softmax(q @ k.T / k.shape[-1] ** 0.5, dim=-1)
        return w @ v


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        w = torch.softmax(q @ k.T / k.shape[-1] ** 0.5, dim=-1)
        return w @ v


def copy_v2_weights_into_v1(v2, v1):
    for name in ("W_query", "W_key", "W_value"):
        if getattr(v2, name).bias is not None:
            raise ValueError("v2 has biases; v1 has none")
    with torch.no_grad():
        for name in ("W_query", "W_key", "W_value"):
            getattr(v1, name).copy_(getattr(v2, name).weight.T)


class CrossAttention(nn.Module):
    def __init__(self, d_in_q, d_in_kv, d_k, d_v, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in_q, d_k, bias=qkv_bias)
        self.W_key = nn.Linear(d_in_kv, d_k, bias=qkv_bias)
        self.W_value = nn.Linear(d_in_kv, d_v, bias=qkv_bias)
        self.scale = None

    def forward(self, x_q, x_kv):
        context = x_kv
        kv_input = context if context is not None else x_q
        q = self.W_query(x_q)
        k = self.W_key(kv_input)
        v = self.W_value(kv_input)
        scale = self.scale if self.scale is not None else q.shape[-1] ** -0.5
        sim = torch.einsum("...id,...jd->...ij", q, k) * scale
        attn = sim.softmax(dim=-1)
        return torch.einsum("...ij,...jd->...id", attn, v)
