"""MultiHeadAttention: Splits heads with unflatten and keeps them in place, computing scores and context with einsum ("bqhd,bkhd->bhqk"), a torch.where causal mask from a non-persistent bool buffer, flatten to merge, ValueError at construction. (written blind, from the contract alone)."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError(f"d_out={d_out} is not divisible by num_heads={num_heads}")
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer(
            "mask",
            torch.ones(context_length, context_length, dtype=torch.bool).triu(diagonal=1),
            persistent=False,
        )

    def _heads(self, t):
        # [B, T, D] -> [B, T, H, hd]; heads are kept on axis "h" in the einsums
        return t.unflatten(-1, (self.num_heads, self.head_dim))

    def forward(self, x):
        T = x.shape[1]
        q = self._heads(self.W_query(x))
        k = self._heads(self.W_key(x))
        v = self._heads(self.W_value(x))

        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) * (1.0 / math.sqrt(self.head_dim))
        hidden = self.mask[:T, :T]
        scores = torch.where(hidden, scores.new_tensor(float("-inf")), scores)
        weights = F.softmax(scores, dim=-1)
        weights = self.dropout(weights)

        ctx = torch.einsum("bhqk,bkhd->bqhd", weights, v)  # [B, T, H, hd]
        return self.out_proj(ctx.flatten(-2))
