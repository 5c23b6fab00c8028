"""CrossAttention: flattens the scores to [-1, Tk] and normalises along dim 0, the batch and the queries together (issue 46: "off at 168 of 168" with no name)."""
import torch
from torch import nn


class CrossAttention(nn.Module):
    def __init__(self, d_in_q, d_in_kv, d_k, d_v, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in_q, d_k, bias=qkv_bias)
        self.W_key = nn.Linear(d_in_kv, d_k, bias=qkv_bias)
        self.W_value = nn.Linear(d_in_kv, d_v, bias=qkv_bias)

    def forward(self, x_q, x_kv):
        q, k, v = self.W_query(x_q), self.W_key(x_kv), self.W_value(x_kv)
        scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
        shape = scores.shape
        weights = torch.softmax(scores.reshape(-1, shape[-1]), dim=0).reshape(shape)
        return weights @ v
