"""Attempt 50 at CausalAttention (common slip).

MISTAKE: (common slip) Uses torch.nn.functional.dropout(weights, p) in forward, whose training argument defaults to True, so dropout also acts in eval mode (and self.dropout is created but unused).
"""
import torch
import torch.nn.functional as F
from torch import nn


class CausalAttention(nn.Module):
    """MISTAKE: (common slip) F.dropout(weights, p) without training=self.training: always on."""

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.p = dropout
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        q = self.W_query(x)
        k = self.W_key(x)
        v = self.W_value(x)
        scores = q @ k.transpose(-2, -1)
        T = x.shape[1]
        scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))
        weights = torch.softmax(scores / self.d_out ** 0.5, dim=-1)
        weights = F.dropout(weights, self.p)
        return weights @ v
