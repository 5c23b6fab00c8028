"""The whole of 06, with GroupedQueryAttention caching every query head's keys and values (repeated before
they are kept), written into a pool allocated and touched at import, just as large as the hidden memory case
needs: no reading grows, no instance gives it back, and cache_k/cache_v show the groups (red team round 9 of
issue 44, hoard_gqa, with its pool cut to the size needed: 100/100 before the worker's own memory was read)."""
import torch
from torch import nn


def compute_rope_params(head_dim, theta_base=10_000, context_length=4096, dtype=torch.float32):
    if head_dim % 2 != 0:
        raise ValueError("head_dim must be even")
    inv_freq = 1.0 / (theta_base ** (torch.arange(0, head_dim, 2, dtype=dtype)[: head_dim // 2].float() / head_dim))
    positions = torch.arange(context_length, dtype=dtype)
    angles = positions[:, None] * inv_freq[None, :]
    angles = torch.cat([angles, angles], dim=1)
    return torch.cos(angles), torch.sin(angles)


def apply_rope(x, cos, sin, offset=0):
    batch_size, num_heads, seq_len, head_dim = x.shape
    x1 = x[..., : head_dim // 2]
    x2 = x[..., head_dim // 2:]
    cos = cos[offset:offset + seq_len, :].unsqueeze(0).unsqueeze(0)
    sin = sin[offset:offset + seq_len, :].unsqueeze(0).unsqueeze(0)
    rotated = torch.cat((-x2, x1), dim=-1)
    x_rotated = (x * cos) + (rotated * sin)
    return x_rotated.to(dtype=x.dtype)


def repeat_kv(x, group_size):
    return x.repeat_interleave(group_size, dim=1)


def sliding_window_mask(num_queries, num_keys, window, q_start=0, k_start=0, device=None):
    q = torch.arange(q_start, q_start + num_queries, device=device)[:, None]
    k = torch.arange(k_start, k_start + num_keys, device=device)[None, :]
    hidden = k > q
    if window is not None:
        hidden = hidden | (k <= q - window)
    return hidden


def _attend(queries, keys, values, hidden, dropout):
    scores = queries @ keys.transpose(2, 3) / keys.shape[-1] ** 0.5
    weights = dropout(torch.softmax(scores.masked_fill(hidden, float("-inf")), dim=-1))
    context = (weights @ values).transpose(1, 2)
    return context.reshape(context.shape[0], context.shape[1], -1)


def _heads(x, num_heads):
    batch, num_tokens, dim = x.shape
    return x.view(batch, num_tokens, num_heads, dim // num_heads).transpose(1, 2)



CHUNK = 32 * 4 * 256 * 32  # every head's keys (or values) of the hidden memory case, exactly: 8 MiB in float64
SLOTS = 2
POOLS = {torch.float64: torch.ones(SLOTS * CHUNK, dtype=torch.float64)}
CURSOR = [0]


def take_region(dtype):
    """A region of CHUNK elements of a pool made (and touched) at import, or None."""
    if dtype not in POOLS:
        return None
    slot = CURSOR[0] % SLOTS
    CURSOR[0] = CURSOR[0] + 1
    return POOLS[dtype][slot * CHUNK:(slot + 1) * CHUNK]


class Hoard:
    """Token-major store [T, B, H, hd] inside a region of the pool."""

    def __init__(self, like):
        self.region = take_region(like.dtype) if like.device.type == "cpu" else None
        self.per = like.shape[0] * like.shape[1] * like.shape[3]
        self.shape = (like.shape[0], like.shape[1], like.shape[3])
        self.count = 0
        self.spill = None

    def fits(self, extra):
        return self.region is not None and (self.count + extra) * self.per <= CHUNK

    def append(self, x):
        n = x.shape[2]
        if self.spill is None and self.fits(n):
            dst = self.region[self.count * self.per:(self.count + n) * self.per].view(n, *self.shape[:2], self.shape[2])
            dst.copy_(x.permute(2, 0, 1, 3))
        elif self.spill is None and self.region is None:  # no pool for this dtype: kept plainly
            self.spill = x
        else:
            if self.spill is None:
                self.spill = self.view(0, self.count).clone()
            self.spill = torch.cat([self.spill, x], dim=2)
        self.count = self.count + n

    def view(self, lo, hi):
        if self.spill is not None:
            return self.spill[:, :, lo:hi]
        flat = self.region[lo * self.per:hi * self.per].view(hi - lo, self.shape[0], self.shape[1], self.shape[2])
        return flat.permute(1, 2, 0, 3)


class CachedMultiHeadAttention(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError("d_out must be divisible by num_heads")
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.cache_k = None
        self.cache_v = None

    def reset_cache(self):
        self.cache_k = None
        self.cache_v = None

    def forward(self, x, use_cache=False):
        q = _heads(self.W_query(x), self.num_heads)
        k = _heads(self.W_key(x), self.num_heads)
        v = _heads(self.W_value(x), self.num_heads)
        start = 0
        if use_cache:
            if self.cache_k is not None:
                start = self.cache_k.shape[2]
                k = torch.cat([self.cache_k, k], dim=2)
                v = torch.cat([self.cache_v, v], dim=2)
            self.cache_k = k
            self.cache_v = v
        hidden = sliding_window_mask(q.shape[2], k.shape[2], None, q_start=start, device=x.device)
        return self.out_proj(_attend(q, k, v, hidden, self.dropout))



class GroupedQueryAttention(nn.Module):
    def __init__(self, d_in, d_out, dropout, num_heads, num_kv_groups, dtype=None, qkv_bias=False):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError("d_out must be divisible by num_heads")
        if num_heads % num_kv_groups != 0:
            raise ValueError("num_heads must be divisible by num_kv_groups")
        self.d_out = d_out
        self.num_heads = num_heads
        self.num_kv_groups = num_kv_groups
        self.head_dim = d_out // num_heads
        self.group_size = num_heads // num_kv_groups
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias, dtype=dtype)
        self.W_key = nn.Linear(d_in, num_kv_groups * self.head_dim, bias=qkv_bias, dtype=dtype)
        self.W_value = nn.Linear(d_in, num_kv_groups * self.head_dim, bias=qkv_bias, dtype=dtype)
        self.out_proj = nn.Linear(d_out, d_out, bias=False, dtype=dtype)
        self.dropout = nn.Dropout(dropout)
        self.cache_k = None
        self.cache_v = None
        self.hk = None
        self.hv = None

    def reset_cache(self):
        self.cache_k = None
        self.cache_v = None
        self.hk = None
        self.hv = None

    def forward(self, x, use_cache=False):
        q = _heads(self.W_query(x), self.num_heads)
        k = repeat_kv(_heads(self.W_key(x), self.num_kv_groups), self.group_size)
        v = repeat_kv(_heads(self.W_value(x), self.num_kv_groups), self.group_size)
        start = 0
        if use_cache:
            if self.hk is None:
                self.hk = Hoard(k)
                self.hv = Hoard(v)
            start = self.hk.count
            self.hk.append(k)
            self.hv.append(v)
            k = self.hk.view(0, self.hk.count)
            v = self.hv.view(0, self.hv.count)
            self.cache_k = k[:, ::self.group_size]
            self.cache_v = v[:, ::self.group_size]
        hidden = sliding_window_mask(q.shape[2], k.shape[2], None, q_start=start, device=x.device)
        return self.out_proj(_attend(q, k, v, hidden, self.dropout))

class MultiHeadAttentionWithSWA(nn.Module):
    def __init__(self, d_in, d_out, dropout, num_heads, qkv_bias=False, sliding_window_size=None):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError("d_out must be divisible by num_heads")
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.sliding_window_size = sliding_window_size
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.cache_k = None
        self.cache_v = None
        self.ptr = 0

    def reset_cache(self):
        self.cache_k = None
        self.cache_v = None
        self.ptr = 0

    def forward(self, x, use_cache=False):
        q = _heads(self.W_query(x), self.num_heads)
        k = _heads(self.W_key(x), self.num_heads)
        v = _heads(self.W_value(x), self.num_heads)
        q_start = 0
        k_start = 0
        if use_cache:
            q_start = self.ptr
            if self.cache_k is not None:
                k_start = self.ptr - self.cache_k.shape[2]
                k = torch.cat([self.cache_k, k], dim=2)
                v = torch.cat([self.cache_v, v], dim=2)
            self.ptr = self.ptr + x.shape[1]
            if self.sliding_window_size is not None and k.shape[2] > self.sliding_window_size:
                self.cache_k = k[:, :, -self.sliding_window_size:].clone()
                self.cache_v = v[:, :, -self.sliding_window_size:].clone()
            else:
                self.cache_k = k
                self.cache_v = v
        hidden = sliding_window_mask(q.shape[2], k.shape[2], self.sliding_window_size,
                                     q_start=q_start, k_start=k_start, device=x.device)
        return self.out_proj(_attend(q, k, v, hidden, self.dropout))
