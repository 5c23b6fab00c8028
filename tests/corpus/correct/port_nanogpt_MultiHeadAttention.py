"""MultiHeadAttention: port of karpathy/nanoGPT model.py CausalSelfAttention, manual path (float tril buffer [1, 1, T, T], masked_fill(bias == 0, -inf), attn_dropout, transpose/contiguous/view; c_attn split into W_query/W_key/W_value)"""
import math

import torch
from torch import nn
from torch.nn import functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError("d_out must be divisible by num_heads")
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.attn_dropout = nn.Dropout(dropout)
        self.n_head = num_heads
        self.n_embd = d_out
        self.register_buffer("bias", torch.tril(torch.ones(context_length, context_length))
                             .view(1, 1, context_length, context_length))

    def forward(self, x):
        B, T, _ = x.size()
        C = self.n_embd
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        att = self.attn_dropout(att)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.out_proj(y)
