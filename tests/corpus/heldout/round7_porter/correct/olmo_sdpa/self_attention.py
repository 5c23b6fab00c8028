"""Correct port: allenai/OLMo, olmo/model.py, OLMoBlock._scaled_dot_product_attention (the manual,
non-flash path):

    attn_weights = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.size(-1))
    if is_causal: ... elif attn_mask is not None: attn_weights = attn_weights + attn_mask.to(torch.float32)
    attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(q.dtype)
    attn_weights = nn.functional.dropout(attn_weights, p=dropout_p)
    return torch.matmul(attn_weights, v)

The course's boolean mask (True = hidden) is turned into OLMo's additive float mask (-inf where hidden);
rows with every key hidden are set to zero after the softmax (the course contract; OLMo avoids them).
OLMo scales by sqrt(q.size(-1)); the course's d_k is the key size (equal whenever Q K^T is defined).
Covers: attention_weights, scaled_dot_product_attention (02).
"""
import math

import torch
from torch import nn


def attention_weights(queries, keys, mask=None):
    q, k = queries, keys
    attn_weights = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.size(-1))
    if mask is not None:
        attn_mask = torch.zeros(mask.shape, dtype=attn_weights.dtype, device=attn_weights.device)
        attn_mask = attn_mask.masked_fill(mask, float("-inf"))
        attn_weights = attn_weights + attn_mask
        all_hidden = torch.isinf(attn_weights).all(dim=-1, keepdim=True)
        attn_weights = attn_weights.masked_fill(all_hidden, 0.0)
        probs = torch.softmax(attn_weights, dim=-1)
        return probs.masked_fill(all_hidden, 0.0)
    return torch.softmax(attn_weights, dim=-1)


def scaled_dot_product_attention(queries, keys, values, mask=None):
    attn_weights = attention_weights(queries, keys, mask)
    return torch.matmul(attn_weights, values)


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

    def forward(self, x_q, x_kv):
        q, k, v = self.W_query(x_q), self.W_key(x_kv), self.W_value(x_kv)
        w = torch.softmax(q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5, dim=-1)
        return w @ v
