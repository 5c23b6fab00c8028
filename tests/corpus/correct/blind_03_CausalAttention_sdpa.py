"""CausalAttention: F.scaled_dot_product_attention with attn_mask=~mask[:T, :T] and dropout_p=self.dropout.p only in training (written blind, from the contract alone)."""
import torch
import torch.nn.functional as F
from torch import nn


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), 1))

    def forward(self, x):
        T = x.shape[1]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        # SDPA's boolean attn_mask is True where attention is ALLOWED: pass the inverse of ours
        return F.scaled_dot_product_attention(
            q, k, v,
            attn_mask=~self.mask[:T, :T],
            dropout_p=self.dropout.p if self.training else 0.0,
        )
