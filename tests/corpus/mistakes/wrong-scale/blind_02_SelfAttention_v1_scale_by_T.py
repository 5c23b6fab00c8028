"""SelfAttention_v1: Scales by sqrt(keys.shape[0]), the number of tokens, instead of sqrt(d_k) (right only when T == d_out). (written blind, from the contract alone). The blind author filed it as unnamed; the scale is the one thing wrong, so it is wrong-scale."""
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
        values = x @ self.W_value

        attn_scores = queries @ keys.T
        # reads the wrong axis: keys.shape[0] is the number of tokens, not d_k
        attn_weights = torch.softmax(attn_scores / keys.shape[0] ** 0.5, dim=-1)

        context_vec = attn_weights @ values
        return context_vec
