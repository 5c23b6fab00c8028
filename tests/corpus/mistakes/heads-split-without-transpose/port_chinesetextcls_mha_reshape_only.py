"""MultiHeadAttention: heads split to [B*H, T, hd] and merged back by reshape alone (round 7 porter, blind).

Bug port: 649453932/Chinese-Text-Classification-Pytorch, models/Transformer.py Multi_Head_Attention
(https://github.com/649453932/Chinese-Text-Classification-Pytorch/issues/53 and issue #10: Q = Q.view(
batch_size * self.num_head, -1, self.dim_head) and context.view(batch_size, -1, dim_head * num_head),
i.e. heads split and merged with view alone). Ported into MultiHeadAttention (04) with its own inline
split/merge (the module's split_heads/merge_heads are correct and unused by this class).
"""

import torch

from torch import nn

from causal_attention import CausalAttention

class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads:
            raise ValueError("d_out must be divisible by num_heads")
        self.num_head = num_heads
        self.dim_head = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        batch_size, T, _ = x.shape
        Q = self.W_query(x).reshape(batch_size * self.num_head, -1, self.dim_head)
        K = self.W_key(x).reshape(batch_size * self.num_head, -1, self.dim_head)
        V = self.W_value(x).reshape(batch_size * self.num_head, -1, self.dim_head)
        scale = K.size(-1) ** -0.5
        attention = torch.matmul(Q, K.permute(0, 2, 1)) * scale
        attention = attention.masked_fill(self.mask.bool()[:T, :T], float("-inf"))
        attention = torch.softmax(attention, dim=-1)
        attention = self.dropout(attention)
        context = torch.matmul(attention, V)
        context = context.reshape(batch_size, -1, self.dim_head * self.num_head)
        return self.out_proj(context)
