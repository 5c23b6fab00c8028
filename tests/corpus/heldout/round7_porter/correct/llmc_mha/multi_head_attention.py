"""Correct port: karpathy/llm.c, train_gpt2.py, class CausalSelfAttention (manual attention path):

    qkv = self.c_attn(x); q, k, v = qkv.split(self.n_embd, dim=2)
    k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) # (B, nh, T, hs)   (same for q, v)
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
    att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float('-inf'))
    att = F.softmax(att, dim=-1)
    y = att @ v # (B, nh, T, T) x (B, nh, T, hs) -> (B, nh, T, hs)
    y = y.transpose(1, 2).contiguous().view(B, T, C) # re-assemble all head outputs side by side
    y = self.c_proj(y)

c_attn split into the course's W_query/W_key/W_value, c_proj renamed out_proj, dropout on the weights.
The head split/merge go into split_heads / merge_heads. Covers: split_heads, merge_heads,
MultiHeadAttention (04).
"""
import torch
from torch import nn

from causal_attention import CausalAttention
import math



def split_heads(x, num_heads):
    B, T, C = x.size()
    if C % num_heads != 0:
        raise ValueError("D must be divisible by num_heads")
    return x.reshape(B, T, num_heads, C // num_heads).transpose(1, 2)  # view() fails on non-contiguous x


def merge_heads(x):
    B, nh, T, hs = x.size()
    return x.transpose(1, 2).contiguous().view(B, T, nh * hs)


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
        if d_out % num_heads != 0:
            raise ValueError("d_out must be divisible by num_heads")
        self.n_head = num_heads
        self.n_embd = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("bias", torch.tril(torch.ones(context_length, context_length))
                             .view(1, 1, context_length, context_length))

    def forward(self, x):
        B, T, _ = x.size()
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        k = split_heads(k, self.n_head)
        q = split_heads(q, self.n_head)
        v = split_heads(v, self.n_head)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = torch.nn.functional.softmax(att, dim=-1)
        att = self.dropout(att)
        y = att @ v
        y = merge_heads(y)
        return self.out_proj(y)


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
