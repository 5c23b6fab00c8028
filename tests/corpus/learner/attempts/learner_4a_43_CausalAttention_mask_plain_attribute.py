"""Attempt 43 at CausalAttention.

MISTAKE: The causal mask is stored as a plain attribute self.mask = ... instead of self.register_buffer('mask', ...): it is not in the state_dict and does not move with .to(device).
"""
import torch
from torch import nn


class CausalAttention(nn.Module):
    """MISTAKE: The causal mask is stored as a plain attribute self.mask = ... instead of self.register_buffer('mask', ...): it is not in the state_dict and does not move with .to(device)."""

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.mask = causal_mask(context_length)

    def forward(self, x):
        q = self.W_query(x)
        k = self.W_key(x)
        v = self.W_value(x)
        scores = q @ k.transpose(-2, -1)
        T = x.shape[1]
        scores = scores.masked_fill(self.mask[:T, :T], float('-inf'))
        weights = torch.softmax(scores / self.d_out ** 0.5, dim=-1)
        weights = self.dropout(weights)
        return weights @ v
