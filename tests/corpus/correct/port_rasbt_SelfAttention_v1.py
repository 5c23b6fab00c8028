"""SelfAttention_v1: port of rasbt/LLMs-from-scratch ch03/01_main-chapter-code/ch03.ipynb SelfAttention_v1 (nn.Parameter(torch.rand) weights, x @ W, queries @ keys.T, softmax of the scores / sqrt(d_k))"""
import torch
from torch import nn


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
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        return attn_weights @ values
