"""SelfAttention_v2: llms-from-scratch-rs SelfAttentionV2 takes the softmax over the queries' dim instead of the keys' (https://github.com/nerdai/llms-from-scratch-rs/pull/30)"""
import torch
from torch import nn


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        keys, queries, values = self.W_key(x), self.W_query(x), self.W_value(x)
        attn_scores = queries @ keys.T
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=0)  # the bug
        return attn_weights @ values
