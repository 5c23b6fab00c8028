"""SelfAttention_v1: Copy-paste slip that projects the values with W_key instead of W_value. (written blind, from the contract alone). Filed as qkv-swapped by its author; its output is exactly attention with the keys as values, which values-not-used (attn @ keys) gives too, so no id names it alone."""
import torch
import torch.nn as nn


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        keys = x @ self.W_key
        queries = x @ self.W_query
        values = x @ self.W_key  # copy-paste slip: key matrix used for the values

        attn_scores = queries @ keys.T
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)

        context_vec = attn_weights @ values
        return context_vec
