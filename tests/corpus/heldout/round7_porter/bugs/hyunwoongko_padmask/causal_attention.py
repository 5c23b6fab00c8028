"""Bug port: hyunwoongko/transformer, models/model/transformer.py make_pad_mask / make_trg_mask
(https://github.com/hyunwoongko/transformer/pull/40 "fix(model): attention pad mask"):
pad_mask = (input_ids != padding_idx).unsqueeze(1).unsqueeze(3) gives (batch, 1, seq_len, 1): it masks
QUERY rows (broadcast over keys) instead of key columns. Ported into causal_padding_mask (03):
combined with the causal mask, padded queries see nothing while real queries may attend to padding keys.
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
    positions = torch.arange(num_tokens, device=lengths.device)
    keep = positions[None, :] < lengths[:, None]  # (input_ids != padding_idx)
    pad_keep = keep.unsqueeze(2)  # bug: [B, T, 1] - broadcast over keys (query rows masked)
    causal_keep = torch.tril(torch.ones(num_tokens, num_tokens, dtype=torch.bool, device=lengths.device))
    return ~(pad_keep & causal_keep[None])


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
