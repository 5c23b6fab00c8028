"""MultiHeadAttention: scales its scores by sqrt(d_out), the model width, while its split_heads reshapes straight to [B, H, T, hd] (issue 46: the helper's breakage hid the exercise's own mistake, which was said with numbers only; the run with a right split_heads names it)."""
import torch
from torch import nn


def split_heads(x, num_heads):
    batch, num_tokens, dim = x.shape
    if dim % num_heads:
        raise ValueError("d_out must be divisible by num_heads")
    return x.reshape(batch, num_heads, num_tokens, dim // num_heads)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads:
            raise ValueError("d_out must be divisible by num_heads")
        self.d_out, self.num_heads = d_out, num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, t, _ = x.shape
        q = split_heads(self.W_query(x), self.num_heads)
        k = split_heads(self.W_key(x), self.num_heads)
        v = split_heads(self.W_value(x), self.num_heads)
        scores = q @ k.transpose(2, 3)
        scores = scores.masked_fill(self.mask.bool()[:t, :t], -torch.inf)
        weights = self.dropout(torch.softmax(scores / self.d_out ** 0.5, dim=-1))
        context = (weights @ v).transpose(1, 2).contiguous().view(b, t, self.d_out)
        return self.out_proj(context)
