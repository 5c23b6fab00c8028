"""CausalAttention: dropout applied to the attention logits before the softmax instead of to the weights after it
(dropout-on-scores).

Source / bug: https://github.com/PaddlePaddle/Parakeet/pull/74 "bug fix: apply dropout to logits before softmax"
(parakeet/modules/attention.py scaled_dot_product_attention), reverted as wrong in
https://github.com/PaddlePaddle/Parakeet/pull/75 and https://github.com/PaddlePaddle/Parakeet/pull/76.
Port: q kᵀ / sqrt(d_k), mask with -inf (the causal mask), dropout on the logits, softmax, @ v (paddle -> torch).
"""
import math

import torch
import torch.nn.functional as F
from torch import nn


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), 1))

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        d = q.shape[-1]
        T = x.shape[1]
        scaled_logit = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d)
        scaled_logit = scaled_logit.masked_fill(self.mask[:T, :T], float("-inf"))
        scaled_logit = self.dropout(scaled_logit)
        attn_weights = F.softmax(scaled_logit, dim=-1)
        out = torch.matmul(attn_weights, v)
        return out
