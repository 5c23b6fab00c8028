"""CrossAttention: Book-style: Linear projections, `queries @ keys.transpose(-2, -1)`, `torch.softmax` of scores divided by `keys.shape[-1]**0.5`, times values. (written blind, from the contract alone)."""
import torch
from torch import nn


class CrossAttention(nn.Module):
    def __init__(self, d_in_q, d_in_kv, d_k, d_v, qkv_bias=False):
        super().__init__()
        self.d_k = d_k
        self.W_query = nn.Linear(d_in_q, d_k, bias=qkv_bias)
        self.W_key = nn.Linear(d_in_kv, d_k, bias=qkv_bias)
        self.W_value = nn.Linear(d_in_kv, d_v, bias=qkv_bias)

    def forward(self, x_q, x_kv):
        queries = self.W_query(x_q)      # [..., Tq, d_k]
        keys = self.W_key(x_kv)          # [..., Tk, d_k]
        values = self.W_value(x_kv)      # [..., Tk, d_v]
        attn_scores = queries @ keys.transpose(-2, -1)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        return attn_weights @ values
