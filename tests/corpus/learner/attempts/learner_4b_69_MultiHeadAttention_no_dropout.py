import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    """MISTAKE (common slip): creates self.dropout but never applies it to the attention weights."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError("d_out must be divisible by num_heads")
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer(
            "mask", torch.ones(context_length, context_length, dtype=torch.bool).triu(diagonal=1)
        )

    def forward(self, x):
        B, T, _ = x.shape
        q = split_heads(self.W_query(x), self.num_heads)
        k = split_heads(self.W_key(x), self.num_heads)
        v = split_heads(self.W_value(x), self.num_heads)
        scores = q @ k.transpose(2, 3)
        scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))
        w = torch.softmax(scores / self.head_dim ** 0.5, dim=-1)
        ctx = merge_heads(w @ v)
        return self.out_proj(ctx)
