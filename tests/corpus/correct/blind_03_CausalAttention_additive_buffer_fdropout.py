"""CausalAttention: Additive 0/-inf float buffer added to scores scaled by d_out**-0.5, F.softmax, F.dropout(training=self.training) (written blind, from the contract alone)."""
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
        # additive mask: 0 on and below the diagonal, -inf above it
        bias = torch.zeros(context_length, context_length).masked_fill(
            torch.ones(context_length, context_length, dtype=torch.bool).triu(1), float("-inf"))
        self.register_buffer("mask", bias)
        self.scale = d_out ** -0.5

    def forward(self, x):
        B, T, _ = x.shape
        queries = self.W_query(x)
        keys = self.W_key(x)
        values = self.W_value(x)
        scores = torch.matmul(queries, keys.transpose(-2, -1)) * self.scale
        scores = scores + self.mask[:T, :T].to(scores.dtype)
        weights = F.softmax(scores, dim=-1)
        weights = F.dropout(weights, p=self.dropout.p, training=self.training)
        return torch.matmul(weights, values)
