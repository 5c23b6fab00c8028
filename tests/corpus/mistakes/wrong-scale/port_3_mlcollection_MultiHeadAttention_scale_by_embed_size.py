"""MultiHeadAttention: softmax(energy / embed_size ** 0.5) scales by the model width, not the head size (wrong-scale).

Source: https://github.com/aladdinpersson/Machine-Learning-Collection/blob/master/ML/Pytorch/more_advanced/transformer_from_scratch/transformer_from_scratch.py (SelfAttention)
Bug report: https://github.com/aladdinpersson/Machine-Learning-Collection/issues/65
Port: reshape to (N, len, heads, head_dim), einsum("nqhd,nkhd->nhqk"), masked_fill(mask == 0, -1e20) with the
tutorial's trg mask tril(ones), softmax(energy / embed_size ** (1/2), dim=3), einsum("nhql,nlhd->nqhd") reshaped,
fc_out; course names, d_in != d_out allowed, dropout on the attention.
"""
import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.embed_size = d_out
        self.heads = num_heads
        self.head_dim = d_out // num_heads
        assert (self.head_dim * num_heads == d_out), "Embedding size needs to be divisible by heads"
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.tril(torch.ones(context_length, context_length)))

    def forward(self, x):
        N, query_len = x.shape[0], x.shape[1]
        value_len = key_len = query_len
        values = self.W_value(x)
        keys = self.W_key(x)
        queries = self.W_query(x)

        values = values.reshape(N, value_len, self.heads, self.head_dim)
        keys = keys.reshape(N, key_len, self.heads, self.head_dim)
        queries = queries.reshape(N, query_len, self.heads, self.head_dim)

        energy = torch.einsum("nqhd,nkhd->nhqk", [queries, keys])
        mask = self.mask[:query_len, :key_len]
        energy = energy.masked_fill(mask == 0, float("-1e20"))

        attention = torch.softmax(energy / (self.embed_size ** (1 / 2)), dim=3)
        attention = self.dropout(attention)

        out = torch.einsum("nhql,nlhd->nqhd", [attention, values]).reshape(
            N, query_len, self.heads * self.head_dim
        )
        return self.out_proj(out)
