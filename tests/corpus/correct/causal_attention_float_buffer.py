"""CausalAttention: a float mask buffer compared with 1."""
import torch
from torch import nn


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.ones(context_length, context_length).triu(1))

    def forward(self, x):
        T = x.size(1)
        scores = self.W_query(x) @ self.W_key(x).transpose(-2, -1) / self.W_key.out_features ** 0.5
        scores = scores.masked_fill(self.mask[:T, :T] == 1, float("-inf"))
        return self.dropout(scores.softmax(-1)) @ self.W_value(x)
