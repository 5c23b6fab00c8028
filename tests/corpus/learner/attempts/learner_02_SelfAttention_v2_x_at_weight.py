"""SelfAttention_v2: multiplied x @ layer.weight like in v1, forgetting nn.Linear stores the weight transposed"""
import torch
from torch import nn


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        queries = x @ self.W_query.weight
        keys = x @ self.W_key.weight
        values = x @ self.W_value.weight
        return scaled_dot_product_attention(queries, keys, values)
