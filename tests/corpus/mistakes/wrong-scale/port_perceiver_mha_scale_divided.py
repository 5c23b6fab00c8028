"""MultiHeadAttention: perceiver-io divides the scores by scale = head_dim ** -0.5 instead of multiplying (https://github.com/esceptico/perceiver-io/issues/9)"""
import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads:
            raise ValueError("d_out % num_heads")
        self.h, self.hd, self.d_out = num_heads, d_out // num_heads, d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.scale = self.hd ** -0.5
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        B, T, _ = x.shape
        q, k, v = (l(x).view(B, T, self.h, self.hd).transpose(1, 2) for l in (self.W_query, self.W_key, self.W_value))
        attention = q @ k.transpose(-2, -1) / self.scale  # the bug
        attention = attention.masked_fill(self.mask.bool()[:T, :T], float("-inf"))
        attention = self.dropout(attention.softmax(dim=-1))
        out = (attention @ v).transpose(1, 2).reshape(B, T, self.d_out)
        return self.out_proj(out)
