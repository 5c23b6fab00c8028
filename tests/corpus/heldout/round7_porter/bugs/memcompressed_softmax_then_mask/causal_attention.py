"""Bug port: lucidrains/memory-compressed-attention, memory_compressed_attention.py
(https://github.com/lucidrains/memory-compressed-attention/issues/2 "The order of masking and softmax
operation"): the causal mask was applied AFTER the softmax, and filled with -float('-inf') (= +inf).
Fixed in commits a41fd4d and 49d2e74. Ported into CausalAttention (03): softmax first, then
masked_fill(mask, -float('-inf')).
"""
import torch
from torch import nn


def causal_mask(num_tokens, device=None):
    return torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool, device=device), diagonal=1)


def apply_causal_mask(scores):
    mask = causal_mask(scores.shape[-1], device=scores.device)
    return scores.masked_fill(mask, float("-inf"))


def renormalize_causal_weights(weights):
    mask = causal_mask(weights.shape[-1], device=weights.device)
    w = weights.masked_fill(mask, 0.0)
    return w / w.sum(dim=-1, keepdim=True)


def padding_mask(lengths, max_len):
    return torch.arange(max_len, device=lengths.device)[None, :] >= lengths[:, None]


def causal_padding_mask(lengths, num_tokens):
    return causal_mask(num_tokens, device=lengths.device)[None] | padding_mask(lengths, num_tokens)[:, None, :]


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        T = x.shape[1]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        dots = q @ k.transpose(-2, -1) * k.shape[-1] ** -0.5
        attn = dots.softmax(dim=-1)
        attn = attn.masked_fill(self.mask.bool()[:T, :T], -float("-inf"))  # bug: after softmax, +inf
        attn = self.dropout(attn)
        return attn @ v
