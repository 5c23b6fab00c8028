"""Attempt 41 at CausalAttention.

MISTAKE: Dropout is applied to the masked scores BEFORE the softmax instead of to the attention weights after the softmax (the docstring: 'Dropout acts on the attention weights, after the softmax').
"""
import torch
from torch import nn


class CausalAttention(nn.Module):
    """MISTAKE: Dropout is applied to the masked scores BEFORE the softmax instead of to the attention weights after the softmax (the docstring: 'Dropout acts on the attention weights, after the softmax')."""

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer('mask', causal_mask(context_length).bool())

    def forward(self, x):
        q = self.W_query(x)
        k = self.W_key(x)
        v = self.W_value(x)
        scores = q @ k.transpose(-2, -1)
        T = x.shape[1]
        scores = scores.masked_fill(self.mask[:T, :T], float('-inf'))
        scores = self.dropout(scores)
        weights = torch.softmax(scores / self.d_out ** 0.5, dim=-1)
        return weights @ v
