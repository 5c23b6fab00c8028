"""CausalAttention: nanoGPT's and Karpathy's lectures' mask buffer: tril of ones, 1 = may attend, shaped [1, 1, T, T], used with masked_fill(mask == 0, -inf) (issue 34, item 10)."""
import torch
import torch.nn as nn


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.tril(torch.ones(context_length, context_length))
                             .view(1, 1, context_length, context_length))

    def forward(self, x):
        B, T, _ = x.shape
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        att = (q @ k.transpose(-2, -1)) * (1.0 / k.size(-1) ** 0.5)
        att = att.masked_fill(self.mask[0, 0, :T, :T] == 0, float("-inf"))
        att = torch.softmax(att, dim=-1)
        att = self.dropout(att)
        return att @ v
