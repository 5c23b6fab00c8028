"""MultiHeadAttentionWrapper: Each head computes scores with einsum, hides the future with torch.where on a boolean triu buffer and uses F.dropout(training=self.training); heads concatenated along dim 2. (written blind, from the contract alone)."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class _CausalAttention(nn.Module):
    """One causal head: einsum scores, torch.where for the mask, F.dropout."""

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        mask = torch.ones(context_length, context_length, dtype=torch.bool).triu(1)
        self.register_buffer("mask", mask)

    def forward(self, x):
        T = x.shape[-2]
        q = self.W_query(x)
        k = self.W_key(x)
        v = self.W_value(x)
        scores = torch.einsum("btd,bsd->bts", q, k) / math.sqrt(k.shape[-1])
        hidden = self.mask[:T, :T].to(torch.bool)
        scores = torch.where(hidden, torch.full_like(scores, float("-inf")), scores)
        weights = F.softmax(scores, dim=-1)
        weights = F.dropout(weights, p=self.dropout.p, training=self.training)
        return torch.einsum("bts,bsd->btd", weights, v)


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        heads = []
        for _ in range(num_heads):
            heads.append(_CausalAttention(d_in, d_out, context_length, dropout, qkv_bias))
        self.heads = nn.ModuleList(heads)

    def forward(self, x):
        outputs = []
        for head in self.heads:
            outputs.append(head(x))
        return torch.cat(outputs, dim=2)
