"""SelfAttention_v1: the weights kept as plain tensors (torch.rand), not nn.Parameter: not registered, so not trained"""
import torch
import torch.nn as nn


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = torch.rand(d_in, d_out)
        self.W_key = torch.rand(d_in, d_out)
        self.W_value = torch.rand(d_in, d_out)

    def forward(self, x):
        keys = x @ self.W_key
        queries = x @ self.W_query
        values = x @ self.W_value
        attn_scores = queries @ keys.T
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        return attn_weights @ values
