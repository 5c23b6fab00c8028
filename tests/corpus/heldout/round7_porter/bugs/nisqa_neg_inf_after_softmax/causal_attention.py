"""Bug port: gabrielmittag/NISQA, nisqa/NISQA_lib.py Alignment (https://github.com/gabrielmittag/NISQA/issues/17
"Bug in Alignment": att[~mask] = float('-Inf') is applied to weights that already went through the
softmax: "The padded elements of att should be set to 0 instead of float(-Inf)"; NaNs result).
Ported into renormalize_causal_weights (03): the future of the normalised weights is set to -inf
instead of 0 before the rows are rescaled.
"""
import torch
from torch import nn


def causal_mask(num_tokens, device=None):
    return torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool, device=device), diagonal=1)


def apply_causal_mask(scores):
    mask = causal_mask(scores.shape[-1], device=scores.device)
    return scores.masked_fill(mask, float("-inf"))


def renormalize_causal_weights(weights):
    T = weights.shape[-1]
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool, device=weights.device), diagonal=1)
    att = weights.masked_fill(mask, float("-Inf"))  # bug: -inf after the softmax
    return att / att.sum(dim=-1, keepdim=True)


def padding_mask(lengths, max_len):
    return torch.arange(max_len, device=lengths.device)[None, :] >= lengths[:, None]


def causal_padding_mask(lengths, num_tokens):
    return causal_mask(num_tokens, device=lengths.device)[None] | padding_mask(lengths, num_tokens)[:, None, :]


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.transpose(1, 2)
        attn_scores = attn_scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        return attn_weights @ values
