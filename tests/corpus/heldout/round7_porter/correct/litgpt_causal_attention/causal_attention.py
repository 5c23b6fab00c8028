"""Correct port: Lightning-AI/litgpt, litgpt/model.py, CausalSelfAttention.forward +
scaled_dot_product_attention (the explicit-mask path) with build_mask_cache:

    def build_mask_cache(max_seq_length, device=None):
        ones = torch.ones((max_seq_length, max_seq_length), device=device, dtype=torch.bool)
        return torch.tril(ones).unsqueeze(0).unsqueeze(0)
    scale = 1.0 / math.sqrt(self.config.attention_scores_scalar or self.config.head_size)
    mask = self.mask_cache[:, :, :T, :T]
    scores = q @ k.mT * scale; scores = scores.masked_fill(~mask, float('-inf'))  (SDPA semantics)
    scores = F.softmax(scores, dim=-1)

One head (head_size = d_out), litgpt's fused `attn` linear replaced by the course's three projections;
dropout on the weights as the course requires. Covers: CausalAttention (03).
"""
import torch
from torch import nn
import math



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
        self.head_size = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask_cache", build_mask_cache(context_length), persistent=False)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        scale = 1.0 / math.sqrt(self.head_size)
        mask = self.mask_cache[0, 0, :T, :T]
        scores = q @ k.transpose(-2, -1) * scale
        scores = scores.masked_fill(~mask, float("-inf"))
        scores = torch.nn.functional.softmax(scores, dim=-1)
        return self.dropout(scores) @ v


def build_mask_cache(max_seq_length, device=None):
    ones = torch.ones((max_seq_length, max_seq_length), device=device, dtype=torch.bool)
    return torch.tril(ones).unsqueeze(0).unsqueeze(0)
