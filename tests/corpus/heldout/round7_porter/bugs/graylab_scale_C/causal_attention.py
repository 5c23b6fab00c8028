"""Bug port: Graylab/DL4Proteins-notebooks, WS04 self-attention head
(https://github.com/Graylab/DL4Proteins-notebooks/issues/12 "Attention uses the wrong scaling
dimension": wei = q @ k.transpose(-2, -1) * C**-0.5 with C the embedding size, where head_size is
meant). Ported into CausalAttention (03): scores scaled by d_in ** -0.5 (C = x.shape[-1]) instead of
d_out ** -0.5. Expected id: wrong-scale.
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
        self.register_buffer("tril", torch.tril(torch.ones(context_length, context_length)))

    def forward(self, x):
        B, T, C = x.shape
        k = self.W_key(x)
        q = self.W_query(x)
        wei = q @ k.transpose(-2, -1) * C ** -0.5  # bug: C is the embedding size, not the head size
        wei = wei.masked_fill(self.tril[:T, :T] == 0, float("-inf"))
        wei = torch.softmax(wei, dim=-1)
        wei = self.dropout(wei)
        v = self.W_value(x)
        return wei @ v
