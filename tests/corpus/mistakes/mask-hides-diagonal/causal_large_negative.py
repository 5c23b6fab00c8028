"""CausalAttention: a mask buffer with the diagonal, filled with -1e9 instead of -inf."""
import torch
from torch import nn


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        steps = torch.arange(context_length)
        self.register_buffer("mask", steps[None, :] >= steps[:, None])

    def forward(self, x):
        T = x.shape[1]
        att = self.W_query(x) @ self.W_key(x).transpose(-1, -2) * self.W_key.out_features ** -0.5
        att = att.masked_fill(self.mask[:T, :T], -1e9)
        return self.dropout(att.softmax(dim=-1)) @ self.W_value(x)
