"""CausalAttention: nanoGPT_mlx's where(mask == 0, att, -1e9) keeps the future and hides the past and the token itself (https://github.com/vithursant/nanoGPT_mlx/issues/6)"""
import math

import torch
from torch import nn
from torch.nn import functional as F


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.attn_dropout = nn.Dropout(dropout)
        self.register_buffer("bias", torch.tril(torch.ones(context_length, context_length)).view(1, context_length, context_length))

    def forward(self, x):
        B, T, _ = x.shape
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = torch.where(self.bias[:, :T, :T] == 0, att, torch.full_like(att, -1e9))  # the bug
        att = self.attn_dropout(F.softmax(att, dim=-1))
        return att @ v
