"""Assignment 02: self-attention with trainable weights."""
import math

import torch
from torch import nn


def attention_weights(queries, keys, mask=None):
    d_k = keys.shape[-1]
    scores = queries @ keys.T / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(mask.all(dim=-1, keepdim=True), 0.0)
    return weights


def scaled_dot_product_attention(queries, keys, values, mask=None):
    return attention_weights(queries, keys, mask) @ values


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q = x @ self.W_query
        k = x @ self.W_key
        v = x @ self.W_value
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
    if v2.W_query.bias is not None or v2.W_key.bias is not None or v2.W_value.bias is not None:
        raise ValueError("v2 has biases; v1 cannot represent them")
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
