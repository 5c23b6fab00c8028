"""CachedMultiHeadAttention: advances its pointer before slicing the causal buffer with it, so the new queries sit after every key and the mask has no effect in cached calls (issue 46: the message says so as positions)."""
import torch
from torch import nn


class CachedMultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads:
            raise ValueError("d_out must be divisible by num_heads")
        self.d_out, self.num_heads, self.head_dim = d_out, num_heads, d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1),
                             persistent=False)
        self.cache_k, self.cache_v = None, None
        self.ptr_current_pos = 0

    def reset_cache(self):
        self.cache_k, self.cache_v = None, None
        self.ptr_current_pos = 0

    def forward(self, x, use_cache=False):
        b, num_tokens, _ = x.shape
        queries = self.W_query(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        keys = self.W_key(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        values = self.W_value(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)

        if use_cache:
            if self.cache_k is not None:
                keys = torch.cat([self.cache_k, keys], dim=2)
                values = torch.cat([self.cache_v, values], dim=2)
            self.cache_k, self.cache_v = keys, values
            self.ptr_current_pos += num_tokens
            rows = slice(self.ptr_current_pos, self.ptr_current_pos + num_tokens)
        else:
            rows = slice(0, num_tokens)
        mask_bool = self.mask.bool()[rows, :keys.shape[2]]

        scores = queries @ keys.transpose(2, 3)
        scores = scores.masked_fill(mask_bool, -torch.inf)
        weights = self.dropout(torch.softmax(scores / self.head_dim ** 0.5, dim=-1))
        context = (weights @ values).transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)
        return self.out_proj(context)
