"""Bug port: google-research/bert, modeling.py, attention_layer (TF -> torch):

    adder = (1.0 - tf.cast(attention_mask, tf.float32)) * -10000.0
    attention_scores += adder
    attention_probs = tf.nn.softmax(attention_scores)

A finite -10000 instead of -inf: hidden positions keep a tiny weight when scores are large, and a row
whose keys are all hidden gets uniform weights instead of zeros. HF transformers fixed the same BERT
mask in https://github.com/huggingface/transformers/pull/17306 ("Fix -1e4 as attn mask").
Ported into attention_weights (02); scaled_dot_product_attention uses it (charged-twice check).
Expected id: mask-fill-finite.
"""
import math

import torch
from torch import nn


def attention_weights(queries, keys, mask=None):
    attention_scores = torch.matmul(queries, keys.transpose(-1, -2))
    attention_scores = attention_scores * (1.0 / math.sqrt(float(keys.shape[-1])))
    if mask is not None:
        attention_mask = (~mask).to(attention_scores.dtype)  # BERT: 1 = attend, 0 = hidden
        adder = (1.0 - attention_mask) * -10000.0
        attention_scores = attention_scores + adder
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
