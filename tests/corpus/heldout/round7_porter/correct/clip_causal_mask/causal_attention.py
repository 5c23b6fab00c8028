"""Correct port: openai/CLIP, clip/model.py, CLIP.build_attention_mask:

    # lazily create causal attention mask, with full attention between the vision tokens
    # pytorch uses additive attention mask; fill with -inf
    mask = torch.empty(self.context_length, self.context_length)
    mask.fill_(float("-inf"))
    mask.triu_(1)  # zero out the lower diagonal

The additive mask is turned into the course's boolean (True where -inf) for causal_mask, and used as
CLIP uses it (added to the scores, inside nn.MultiheadAttention) in apply_causal_mask.
Covers: causal_mask, apply_causal_mask (03).
"""
import torch
from torch import nn


def causal_mask(num_tokens, device=None):
    return torch.isinf(_build_attention_mask(num_tokens, device=device))


def apply_causal_mask(scores):
    mask = _build_attention_mask(scores.shape[-1], device=scores.device).to(scores.dtype)
    return scores + mask


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


def _build_attention_mask(context_length, device=None):
    mask = torch.empty(context_length, context_length, device=device)
    mask.fill_(float("-inf"))
    mask.triu_(1)  # zero out the lower diagonal
    return mask
