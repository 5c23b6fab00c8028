"""Bug port: fla-org/flash-linear-attention, fla/layers/gla.py
(https://github.com/fla-org/flash-linear-attention/issues/126): past_key_value.update(..., offset=q.shape[2])
where q is [b, t, h, d] after rearrange, so the cache offset advances by the number of HEADS instead of
the number of tokens. Ported into CachedMultiHeadAttention (06): the position counter is advanced by
q.shape[2] of a [B, T, H, hd] query.
"""
import torch
from torch import nn


def compute_rope_params(head_dim, theta_base=10_000, context_length=4096, dtype=torch.float32):
    if head_dim % 2:
        raise ValueError("head_dim must be even")
    inv_freq = 1.0 / (theta_base ** (torch.arange(0, head_dim, 2, dtype=dtype)[: head_dim // 2].float() / head_dim))
    positions = torch.arange(context_length, dtype=dtype)
    angles = positions[:, None] * inv_freq[None, :]
    angles = torch.cat([angles, angles], dim=1)
    return torch.cos(angles), torch.sin(angles)


def apply_rope(x, cos, sin, offset=0):
    batch, heads, seq_len, head_dim = x.shape
    x1 = x[..., : head_dim // 2]
    x2 = x[..., head_dim // 2:]
    cos = cos[offset:offset + seq_len, :][None, None]
    sin = sin[offset:offset + seq_len, :][None, None]
    rotated = torch.cat((-x2, x1), dim=-1)
    return (x * cos + rotated * sin).to(dtype=x.dtype)


def repeat_kv(x, group_size):
    return x.repeat_interleave(group_size, dim=1)


def sliding_window_mask(num_queries, num_keys, window, q_start=0, k_start=0, device=None):
    queries = torch.arange(q_start, q_start + num_queries, device=device)[:, None]
    keys = torch.arange(k_start, k_start + num_keys, device=device)[None, :]
    hidden = keys > queries
    if window is not None:
        hidden = hidden | (queries - keys >= window)
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
        if d_out % num_heads:
            raise ValueError("d_out must be divisible by num_heads")
        self.num_heads, self.head_dim = num_heads, d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.reset_cache()

    def reset_cache(self):
        self.cache_k, self.cache_v, self.offset = None, None, 0

    def forward(self, x, use_cache=False):
        b, t, _ = x.shape
        q = self.W_query(x).view(b, t, self.num_heads, self.head_dim)  # [b, t, h, d] as in fla
        k = _heads(self.W_key(x), self.num_heads)
        v = _heads(self.W_value(x), self.num_heads)
        start = 0
        if use_cache:
            start = self.offset
            if self.cache_k is not None:
                k = torch.cat([self.cache_k, k], dim=2)
                v = torch.cat([self.cache_v, v], dim=2)
            self.cache_k, self.cache_v = k, v
            self.offset += q.shape[2]  # bug: number of heads, not tokens
        q = q.transpose(1, 2)
        hidden = sliding_window_mask(t, k.shape[2], None, q_start=start, k_start=0, device=x.device)
        return self.out_proj(_attend(q, k, v, hidden, self.dropout))


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_in, d_out, dropout, num_heads, num_kv_groups, dtype=None, qkv_bias=False):
        super().__init__()
        if d_out % num_heads:
            raise ValueError("d_out must be divisible by num_heads")
        if num_heads % num_kv_groups:
            raise ValueError("num_heads must be divisible by num_kv_groups")
        self.num_heads, self.num_kv_groups = num_heads, num_kv_groups
        self.head_dim = d_out // num_heads
        self.group_size = num_heads // num_kv_groups
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias, dtype=dtype)
        self.W_key = nn.Linear(d_in, num_kv_groups * self.head_dim, bias=qkv_bias, dtype=dtype)
        self.W_value = nn.Linear(d_in, num_kv_groups * self.head_dim, bias=qkv_bias, dtype=dtype)
        self.out_proj = nn.Linear(d_out, d_out, bias=False, dtype=dtype)
        self.dropout = nn.Dropout(dropout)
        self.reset_cache()

    def reset_cache(self):
        self.cache_k, self.cache_v, self.position = None, None, 0

    def forward(self, x, use_cache=False):
        T = x.shape[1]
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
        else:
            start = 0
        hidden = sliding_window_mask(T, k.shape[2], None, q_start=start, device=x.device)
        k = repeat_kv(k, self.group_size)
        v = repeat_kv(v, self.group_size)
        return self.out_proj(_attend(q, k, v, hidden, self.dropout))


class MultiHeadAttentionWithSWA(nn.Module):
    def __init__(self, d_in, d_out, dropout, num_heads, qkv_bias=False, sliding_window_size=None):
        super().__init__()
        if d_out % num_heads:
            raise ValueError("d_out must be divisible by num_heads")
        self.d_out, self.num_heads, self.head_dim = d_out, num_heads, d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.sliding_window_size = sliding_window_size
        self.reset_cache()

    def reset_cache(self):
        self.cache_k, self.cache_v, self.position = None, None, 0

    def forward(self, x, use_cache=False):
        T = x.shape[1]
        W = self.sliding_window_size
        q = _heads(self.W_query(x), self.num_heads)
        k = _heads(self.W_key(x), self.num_heads)
        v = _heads(self.W_value(x), self.num_heads)
        if not use_cache:
            return self.out_proj(_attend(q, k, v, sliding_window_mask(T, T, W, device=x.device), self.dropout))
        start = self.position
        if self.cache_k is not None:
            k = torch.cat([self.cache_k, k], dim=2)
            v = torch.cat([self.cache_v, v], dim=2)
        k_start = start + T - k.shape[2]
        hidden = sliding_window_mask(T, k.shape[2], W, q_start=start, k_start=k_start, device=x.device)
        out = self.out_proj(_attend(q, k, v, hidden, self.dropout))
        keep = k.shape[2] if W is None else max(W - 1, 0)
        self.cache_k = k[:, :, max(k.shape[2] - keep, 0):, :]
        self.cache_v = v[:, :, max(v.shape[2] - keep, 0):, :]
        self.position += T
        return out
