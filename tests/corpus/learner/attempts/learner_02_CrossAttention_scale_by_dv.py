"""CrossAttention: wrote the attention by hand and scaled by sqrt of the values' size d_v instead of d_k"""
import math

import torch
from torch import nn


class CrossAttention(nn.Module):
    def __init__(self, d_in_q, d_in_kv, d_k, d_v, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in_q, d_k, bias=qkv_bias)
        self.W_key = nn.Linear(d_in_kv, d_k, bias=qkv_bias)
        self.W_value = nn.Linear(d_in_kv, d_v, bias=qkv_bias)

    def forward(self, x_q, x_kv):
        queries = self.W_query(x_q)
        keys = self.W_key(x_kv)
        values = self.W_value(x_kv)
        scores = queries @ keys.transpose(-2, -1)
        weights = torch.softmax(scores / math.sqrt(values.shape[-1]), dim=-1)
        return weights @ values
