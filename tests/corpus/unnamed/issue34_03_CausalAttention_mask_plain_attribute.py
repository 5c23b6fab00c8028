"""CausalAttention: the causal mask kept as a plain tensor attribute (self.mask = ...) instead of a registered buffer, so it stays behind when the module moves with .to(device) (issue 34, item 10: the structure check asks for a buffer, in any convention)."""
import torch
import torch.nn as nn


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.mask = torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), diagonal=1)

    def forward(self, x):
        T = x.shape[1]
        scores = self.W_query(x) @ self.W_key(x).transpose(1, 2)
        scores = scores.masked_fill(self.mask[:T, :T].to(x.device), float("-inf"))
        weights = self.dropout(torch.softmax(scores / scores.new_tensor(self.W_key.out_features) ** 0.5, dim=-1))
        return weights @ self.W_value(x)
