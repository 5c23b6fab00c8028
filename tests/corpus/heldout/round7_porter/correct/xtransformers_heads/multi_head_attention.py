"""Correct port: lucidrains/x-transformers, x_transformers/x_transformers.py, Attention.forward:

    q, k, v = map(lambda t: rearrange(t, 'b n (h d) -> b h n d', h = h), (q, k, v))   # split
    out = rearrange(out, 'b h n d -> b n (h d)')                                        # merge

einops.rearrange written out with torch.unflatten / movedim / flatten (same semantics: the feature axis
is (h d) with h outermost). Covers: split_heads, merge_heads (04).
"""
import torch
from torch import nn

from causal_attention import CausalAttention


def split_heads(x, num_heads):
    b, n, hd_total = x.shape
    if hd_total % num_heads:
        raise ValueError(f"{hd_total} features cannot be split into {num_heads} heads")
    # 'b n (h d) -> b h n d'
    return x.unflatten(-1, (num_heads, hd_total // num_heads)).movedim(-2, 1)


def merge_heads(x):
    # 'b h n d -> b n (h d)'
    return x.movedim(1, -2).flatten(-2)


def split_qkv(qkv, num_heads):
    b, t, d3 = qkv.shape
    if d3 % (3 * num_heads):
        raise ValueError("3D must be 3 * a multiple of num_heads")
    qkv = qkv.reshape(b, t, 3, num_heads, d3 // (3 * num_heads)).permute(2, 0, 3, 1, 4)
    return qkv[0], qkv[1], qkv[2]


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads:
            raise ValueError("d_out must be divisible by num_heads")
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = split_heads(self.W_key(x), self.num_heads)
        queries = split_heads(self.W_query(x), self.num_heads)
        values = split_heads(self.W_value(x), self.num_heads)
        attn_scores = queries @ keys.transpose(2, 3)
        mask_bool = self.mask.bool()[:num_tokens, :num_tokens]
        attn_scores = attn_scores.masked_fill(mask_bool, -torch.inf)
        attn_weights = torch.softmax(attn_scores / self.head_dim ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        context = merge_heads(attn_weights @ values)
        return self.out_proj(context)


class FusedQKVAttention(nn.Module):
    def __init__(self, dim, chan, num_heads=1, qkv_bias=False, qk_scale=None):
        super().__init__()
        if chan % num_heads:
            raise ValueError("chan must be divisible by num_heads")
        self.num_heads = num_heads
        self.chan = chan
        self.head_dim = chan // num_heads
        self.scale = qk_scale or self.head_dim ** -0.5
        self.qkv = nn.Linear(dim, chan * 3, bias=qkv_bias)
        self.proj = nn.Linear(chan, chan)

    def forward(self, x):
        q, k, v = split_qkv(self.qkv(x), self.num_heads)
        attn = (q * self.scale) @ k.transpose(-2, -1)
        attn = attn.softmax(dim=-1)
        out = merge_heads(attn @ v)
        return self.proj(out) + merge_heads(v)
