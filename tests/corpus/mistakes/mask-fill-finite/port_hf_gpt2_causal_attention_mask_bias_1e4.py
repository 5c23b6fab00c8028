"""CausalAttention: GPT-2's old mask bias: w = w * b - 1e4 * (1 - b) (huggingface/transformers#3181)"""
import torch
from torch import nn


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("bias", torch.tril(torch.ones(context_length, context_length)))

    def forward(self, x):
        t = x.shape[1]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        w = q @ k.transpose(1, 2) / k.shape[-1] ** 0.5
        b = self.bias[:t, :t]
        w = w * b - 1e4 * (1 - b)
        w = self.dropout(torch.softmax(w, dim=-1))
        return w @ v
