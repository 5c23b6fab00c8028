"""Bug port: nyu-mll/jiant, BERT attention mask sign (https://github.com/nyu-mll/jiant/pull/465
"Critical bug: fix sign of BERT attention mask" - "You want ones for the nonzero tokens"): the mask
handed to BERT's additive mask had the opposite polarity, so real tokens were masked and padding
attended. Ported into attention_weights (02): the course mask (True = hidden) is passed where BERT
expects 1 = attend. Expected id: mask-inverted (plus BERT's finite -10000).
"""
import math

import torch
from torch import nn


def attention_weights(queries, keys, mask=None):
    attention_scores = torch.matmul(queries, keys.transpose(-1, -2)) / math.sqrt(keys.shape[-1])
    if mask is not None:
        attention_mask = mask.to(attention_scores.dtype)  # bug: wrong polarity
        attention_scores = attention_scores + (1.0 - attention_mask) * -10000.0
    return torch.softmax(attention_scores, dim=-1)


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

    def forward(self, x_q, x_kv):
        q, k, v = self.W_query(x_q), self.W_key(x_kv), self.W_value(x_kv)
        w = torch.softmax(q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5, dim=-1)
        return w @ v
