"""CausalAttention: Bool buffer from causal_mask, einsum scores, torch.where with -inf, Tensor.softmax, einsum with the values (written blind, from the contract alone)."""
import math

import torch
from torch import nn


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))  # bool, True = future

    def forward(self, x):
        T = x.shape[-2]
        q = self.W_query(x)
        k = self.W_key(x)
        v = self.W_value(x)
        scores = torch.einsum("bqd,bkd->bqk", q, k) / math.sqrt(k.shape[-1])
        scores = torch.where(self.mask[:T, :T], float("-inf"), scores)
        weights = self.dropout(scores.softmax(dim=-1))
        return torch.einsum("bqk,bkd->bqd", weights, v)
