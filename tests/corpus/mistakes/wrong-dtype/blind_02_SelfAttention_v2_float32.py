"""SelfAttention_v2: Forces the softmax and the weighted sum to float32, so float64 (or half) inputs come back as float32. (written blind, from the contract alone)."""
import torch
import torch.nn as nn


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)

        attn_scores = queries @ keys.T
        # "safer" softmax in float32 -- but the result then stays float32
        attn_weights = torch.softmax(
            attn_scores / keys.shape[-1] ** 0.5, dim=-1, dtype=torch.float32
        )

        context_vec = attn_weights @ values.float()
        return context_vec
