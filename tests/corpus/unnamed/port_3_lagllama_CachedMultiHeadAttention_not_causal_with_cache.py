"""CachedMultiHeadAttention: with the KV cache on, attention is computed with is_causal=False, so the first (prefill)
call and any multi-token cached chunk let tokens see the future.

Source: time-series-foundation-models/lag-llama lag_llama/gluon/... CausalSelfAttention.forward before the fix
(if use_kv_cache: ... F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=..., is_causal=False)).
Bug report / fix: https://github.com/time-series-foundation-models/lag-llama/pull/84 "Fix issue #81: Broken kv_cache"
(item 2, "Causal Attention Error").
Port: nanoGPT-style c_attn split into the course's W_query/W_key/W_value, cache = cat along the time axis,
SDPA with is_causal = not use_cache (rotary positions left out).
"""
import torch
import torch.nn.functional as F
from torch import nn


class CachedMultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.n_head = num_heads
        self.n_embd = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = dropout
        self.reset_cache()

    def reset_cache(self):
        self.cache_k = None
        self.cache_v = None

    def forward(self, x, use_cache=False):
        B, T, C = x.size()
        q = self.W_query(x).view(B, T, self.n_head, self.n_embd // self.n_head).transpose(1, 2)
        k = self.W_key(x).view(B, T, self.n_head, self.n_embd // self.n_head).transpose(1, 2)
        v = self.W_value(x).view(B, T, self.n_head, self.n_embd // self.n_head).transpose(1, 2)

        if use_cache:
            if self.cache_k is not None:
                k = torch.cat([self.cache_k, k], dim=2)
                v = torch.cat([self.cache_v, v], dim=2)
            self.cache_k, self.cache_v = k, v

        y = F.scaled_dot_product_attention(
            q, k, v, attn_mask=None, dropout_p=self.dropout if self.training else 0.0, is_causal=not use_cache
        )
        y = y.transpose(1, 2).contiguous().view(B, T, self.n_embd)
        return self.out_proj(y)
