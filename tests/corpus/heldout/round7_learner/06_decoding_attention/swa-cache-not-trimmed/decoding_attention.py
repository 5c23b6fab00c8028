"""Assignment 06: decoding attention, the attention of fast generation.

Lesson: the notebook ``decoding_attention.ipynb`` beside this file. A decoder generates one token at
a time; each new token attends to every earlier one. Three ideas make that cheap: a KV cache (keys
and values of earlier tokens computed once and kept), grouped-query attention (several query heads
share one key/value head, so the cache is smaller) and sliding-window attention (each token sees only
the last few, so the cache stops growing). Rotary positions (RoPE) tell attention where tokens are by
rotating queries and keys, which works at any position a cached call starts from.

Shapes: B batch, T tokens, H query heads, G key/value groups, hd = d_out / H features per head.
Masks are boolean and True means hidden.
"""
import torch
from torch import nn


def compute_rope_params(head_dim, theta_base=10_000, context_length=4096, dtype=torch.float32):
    if head_dim % 2 != 0:
        raise ValueError("head_dim must be even")
    inv_freq = 1.0 / (theta_base ** (torch.arange(0, head_dim, 2, dtype=dtype) / head_dim))
    positions = torch.arange(context_length, dtype=dtype)
    angles = positions[:, None] * inv_freq[None, :]
    angles = torch.cat([angles, angles], dim=-1)
    return torch.cos(angles), torch.sin(angles)


def apply_rope(x, cos, sin, offset=0):
    T, hd = x.shape[-2], x.shape[-1]
    x1 = x[..., : hd // 2]
    x2 = x[..., hd // 2 :]
    c = cos[offset:offset + T].to(x.device)
    s = sin[offset:offset + T].to(x.device)
    rotated = torch.cat((-x2, x1), dim=-1)
    out = x * c + rotated * s
    return out.to(x.dtype)


def repeat_kv(x, group_size):
    return x.repeat_interleave(group_size, dim=1)


def sliding_window_mask(num_queries, num_keys, window, q_start=0, k_start=0, device=None):
    qpos = torch.arange(q_start, q_start + num_queries, device=device)[:, None]
    kpos = torch.arange(k_start, k_start + num_keys, device=device)[None, :]
    hidden = kpos > qpos
    if window is not None:
        hidden = hidden | (kpos <= qpos - window)
    return hidden


def _attend(queries, keys, values, hidden, dropout):
    """Scaled dot-product attention of [B, H, Tq, hd] queries over [B, H, Tk, hd] keys and values,
    ``hidden`` [Tq, Tk] removed; the heads merged back: -> [B, Tq, H*hd]."""
    scores = queries @ keys.transpose(2, 3) / keys.shape[-1] ** 0.5  # [B, H, Tq, Tk]
    weights = dropout(torch.softmax(scores.masked_fill(hidden, float("-inf")), dim=-1))  # [B, H, Tq, Tk]
    context = (weights @ values).transpose(1, 2)  # [B, Tq, H, hd]
    return context.reshape(context.shape[0], context.shape[1], -1)  # [B, Tq, H*hd]


def _heads(x, num_heads):
    """[B, T, num_heads*hd] -> [B, num_heads, T, hd]."""
    batch, num_tokens, dim = x.shape
    return x.view(batch, num_tokens, num_heads, dim // num_heads).transpose(1, 2)


class CachedMultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError("d_out must be divisible by num_heads")
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.reset_cache()

    def reset_cache(self):
        self.cache_k = None
        self.cache_v = None
        self.position = 0

    def forward(self, x, use_cache=False):
        B, T, _ = x.shape
        q = _heads(self.W_query(x), self.num_heads)
        k = _heads(self.W_key(x), self.num_heads)
        v = _heads(self.W_value(x), self.num_heads)
        if use_cache:
            start = self.position
            if self.cache_k is not None:
                k = torch.cat([self.cache_k, k], dim=2)
                v = torch.cat([self.cache_v, v], dim=2)
            self.cache_k, self.cache_v = k, v
            self.position += T
            hidden = sliding_window_mask(T, k.shape[2], None, q_start=start, device=x.device)
        else:
            hidden = sliding_window_mask(T, T, None, device=x.device)
        return self.out_proj(_attend(q, k, v, hidden, self.dropout))


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_in, d_out, dropout, num_heads, num_kv_groups, dtype=None, qkv_bias=False):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError("d_out must be divisible by num_heads")
        if num_heads % num_kv_groups != 0:
            raise ValueError("num_heads must be divisible by num_kv_groups")
        self.num_heads = num_heads
        self.num_kv_groups = num_kv_groups
        self.head_dim = d_out // num_heads
        self.group_size = num_heads // num_kv_groups
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias, dtype=dtype)
        self.W_key = nn.Linear(d_in, num_kv_groups * self.head_dim, bias=qkv_bias, dtype=dtype)
        self.W_value = nn.Linear(d_in, num_kv_groups * self.head_dim, bias=qkv_bias, dtype=dtype)
        self.out_proj = nn.Linear(d_out, d_out, bias=False, dtype=dtype)
        self.dropout = nn.Dropout(dropout)
        self.reset_cache()

    def reset_cache(self):
        self.cache_k = None
        self.cache_v = None
        self.position = 0

    def forward(self, x, use_cache=False):
        B, T, _ = x.shape
        q = _heads(self.W_query(x), self.num_heads)
        k = _heads(self.W_key(x), self.num_kv_groups)
        v = _heads(self.W_value(x), self.num_kv_groups)
        if use_cache:
            start = self.position
            if self.cache_k is not None:
                k = torch.cat([self.cache_k, k], dim=2)
                v = torch.cat([self.cache_v, v], dim=2)
            self.cache_k, self.cache_v = k, v
            self.position += T
            hidden = sliding_window_mask(T, k.shape[2], None, q_start=start, device=x.device)
        else:
            hidden = sliding_window_mask(T, T, None, device=x.device)
        k = repeat_kv(k, self.group_size)
        v = repeat_kv(v, self.group_size)
        return self.out_proj(_attend(q, k, v, hidden, self.dropout))


class MultiHeadAttentionWithSWA(nn.Module):
    def __init__(self, d_in, d_out, dropout, num_heads, qkv_bias=False, sliding_window_size=None):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError("d_out must be divisible by num_heads")
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.window = sliding_window_size
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.reset_cache()

    def reset_cache(self):
        self.cache_k = None
        self.cache_v = None
        self.position = 0

    def forward(self, x, use_cache=False):
        B, T, _ = x.shape
        q = _heads(self.W_query(x), self.num_heads)
        k = _heads(self.W_key(x), self.num_heads)
        v = _heads(self.W_value(x), self.num_heads)
        if use_cache:
            start = self.position
            if self.cache_k is not None:
                k = torch.cat([self.cache_k, k], dim=2)
                v = torch.cat([self.cache_v, v], dim=2)
            if self.window is not None:
                keep = self.window + T - 1
                k_att, v_att = k[:, :, -keep:], v[:, :, -keep:]
                self.cache_k, self.cache_v = k, v
            else:
                k_att, v_att = k, v
                self.cache_k, self.cache_v = k, v
            n = k_att.shape[2]
            k_start = start + T - n
            self.position += T
            hidden = sliding_window_mask(T, n, self.window, q_start=start, k_start=k_start, device=x.device)
            k, v = k_att, v_att
        else:
            hidden = sliding_window_mask(T, T, self.window, device=x.device)
        return self.out_proj(_attend(q, k, v, hidden, self.dropout))
