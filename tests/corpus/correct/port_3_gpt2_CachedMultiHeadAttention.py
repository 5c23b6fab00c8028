"""CachedMultiHeadAttention ported from openai/gpt-2 src/model.py attn(x, scope, n_state, past=...) (TF -> PyTorch).

Source: https://github.com/openai/gpt-2/blob/master/src/model.py (attn, multihead_attn, mask_attn_weights,
attention_mask)
Kept: present = (k, v) of the new tokens concatenated after past along the sequence axis; w = q kᵀ * rsqrt(v's
feature size); mask_attn_weights with attention_mask(nd, ns) counted from the lower right corner and
w*b - 1e10*(1-b); softmax; merge_heads; c_proj.
Adapted: the fused c_attn conv1d split into W_query/W_key/W_value, c_proj named out_proj; past kept on the module
as cache_k/cache_v ([B, H, T, hd]) instead of returned; dropout on the weights (GPT-2 has none).
"""
import torch
from torch import nn


def _gpt2_attention_mask(nd, ns, *, dtype, device=None):
    """1's in the lower triangle, counting from the lower right corner."""
    i = torch.arange(nd, device=device)[:, None]
    j = torch.arange(ns, device=device)
    m = i >= j - ns + nd
    return m.to(dtype)


def _gpt2_softmax(x, axis=-1):
    x = x - torch.amax(x, dim=axis, keepdim=True)
    ex = torch.exp(x)
    return ex / torch.sum(ex, dim=axis, keepdim=True)


class CachedMultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.n_head = num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.reset_cache()

    def reset_cache(self):
        self.cache_k = None
        self.cache_v = None

    def split_heads(self, x):
        # From [batch, sequence, features] to [batch, heads, sequence, features]
        *start, m = x.shape
        return x.reshape(start + [self.n_head, m // self.n_head]).permute(0, 2, 1, 3)

    def merge_heads(self, x):
        # Reverse of split_heads
        x = x.permute(0, 2, 1, 3)
        *start, a, b = x.shape
        return x.reshape(start + [a * b])

    def mask_attn_weights(self, w):
        # w has shape [batch, heads, dst_sequence, src_sequence], where information flows from src to dst.
        _, _, nd, ns = w.shape
        b = _gpt2_attention_mask(nd, ns, dtype=w.dtype, device=w.device)
        b = b.reshape(1, 1, nd, ns)
        w = w * b - torch.tensor(1e10, dtype=w.dtype) * (1 - b)
        return w

    def multihead_attn(self, q, k, v):
        # q, k, v have shape [batch, heads, sequence, features]
        w = torch.matmul(q, k.transpose(-2, -1))
        w = w * torch.rsqrt(torch.tensor(v.shape[-1], dtype=w.dtype))

        w = self.mask_attn_weights(w)
        w = _gpt2_softmax(w)
        w = self.dropout(w)
        a = torch.matmul(w, v)
        return a

    def forward(self, x, use_cache=False):
        q, k, v = map(self.split_heads, (self.W_query(x), self.W_key(x), self.W_value(x)))
        if use_cache:
            if self.cache_k is not None:
                k = torch.cat([self.cache_k, k], dim=-2)
                v = torch.cat([self.cache_v, v], dim=-2)
            self.cache_k, self.cache_v = k, v
        a = self.multihead_attn(q, k, v)
        a = self.merge_heads(a)
        return self.out_proj(a)
