"""Assignment 03: causal attention (masking the future)."""
import torch
from torch import nn


def causal_mask(num_tokens, device=None):
    return torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool, device=device), diagonal=1)


def apply_causal_mask(scores):
    T = scores.shape[-1]
    return scores.masked_fill(causal_mask(T, device=scores.device), float("-inf"))


def renormalize_causal_weights(weights):
    T = weights.shape[-1]
    masked = weights.masked_fill(causal_mask(T, device=weights.device), 0.0)
    total = masked.sum(dim=-1, keepdim=True)
    return masked / total


def padding_mask(lengths, max_len):
    positions = torch.arange(max_len, device=lengths.device)
    return positions[None, :] >= lengths[:, None]


def causal_padding_mask(lengths, num_tokens):
    causal = causal_mask(num_tokens, device=lengths.device)
    pad = padding_mask(lengths, num_tokens)
    return causal[None, :, :] | pad[:, None, :]


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        b, T, _ = x.shape
        q = self.W_query(x)
        k = self.W_key(x)
        v = self.W_value(x)
        scores = q @ k.transpose(1, 2)
        scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))
        weights = torch.softmax(scores / k.shape[-1] ** 0.5, dim=-1)
        weights = self.dropout(weights)
        return weights @ v
