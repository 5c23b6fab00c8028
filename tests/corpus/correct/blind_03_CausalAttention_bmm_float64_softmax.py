"""CausalAttention: Pre-scaled queries, torch.bmm, masked_fill with an arange-built bool buffer, softmax computed in float64 then cast back (written blind, from the contract alone)."""
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
        idx = torch.arange(context_length)
        self.register_buffer("mask", idx[None, :] > idx[:, None])

    def forward(self, x):
        T = x.size(1)
        q = self.W_query(x) / math.sqrt(self.W_key.out_features)  # scale the queries first
        k = self.W_key(x)
        v = self.W_value(x)
        scores = torch.bmm(q, k.transpose(1, 2)).masked_fill(self.mask[:T, :T], float("-inf"))
        # softmax in float64 for accuracy, back to the input dtype afterwards
        weights = torch.softmax(scores, dim=-1, dtype=torch.float64).to(x.dtype)
        weights = self.dropout(weights)
        return torch.bmm(weights, v)
