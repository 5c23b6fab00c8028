"""MultiHeadAttentionWithSWA: the banded mask is triu(tril(ones), diagonal=-sliding_window), so each query sees
itself and sliding_window earlier tokens (window + 1 keys) in a prefill (window-off-by-one).

Source: https://github.com/mistralai/mistral-inference/blob/c18d5b9/one_file_ref.py (initial mistral-src reference:
Attention with a rotating cache of sliding_window positions; Transformer.forward: mask = tril(ones, 0);
mask = triu(mask, diagonal=-sliding_window); mask = log(mask)).
Bug: https://github.com/huggingface/transformers/pull/26792 (patrickvonplaten: "this corrects a bug that was in
Mistral's windowed attention" - triu(..., diagonal=-sliding_window) is one too wide; fixed to -sliding_window + 1).
Port: course names, n_kv_heads = n_heads, no rotary; the rotating buffer (scatter at positions % sliding_window) kept
as a cat-and-trim cache of sliding_window positions; a prefill attends its own keys with the banded mask,
a cached single token attends the cache (as one_file_ref's decode branch), a cached chunk attends cache + chunk
with the same banded mask offset to its positions.
"""
import torch
from torch import nn


class MultiHeadAttentionWithSWA(nn.Module):
    def __init__(self, d_in, d_out, dropout, num_heads, qkv_bias=False, sliding_window_size=None):
        super().__init__()
        if d_out % num_heads:
            raise ValueError("d_out must be divisible by num_heads")
        self.n_heads = num_heads
        self.head_dim = d_out // num_heads
        self.sliding_window = sliding_window_size
        self.scale = self.head_dim ** -0.5
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.reset_cache()

    def reset_cache(self):
        self.cache_k = None
        self.cache_v = None
        self.pos = 0

    def _mask(self, positions, n_keys, dtype, device):
        total = int(positions[-1]) + 1
        tensor = torch.full((total, total), fill_value=1, dtype=dtype, device=device)
        mask = torch.tril(tensor, diagonal=0)
        # make the mask banded to account for sliding window
        if self.sliding_window is not None:
            mask = torch.triu(mask, diagonal=-self.sliding_window)
        mask = torch.log(mask)
        return mask[positions][:, total - n_keys:]

    def forward(self, x, use_cache=False):
        bsz, seqlen, _ = x.shape
        xq = self.W_query(x).view(bsz, seqlen, self.n_heads, self.head_dim)
        xk = self.W_key(x).view(bsz, seqlen, self.n_heads, self.head_dim)
        xv = self.W_value(x).view(bsz, seqlen, self.n_heads, self.head_dim)

        start = self.pos if use_cache else 0
        positions = torch.arange(start, start + seqlen, device=x.device)
        key, value = xk, xv
        if use_cache:
            if self.cache_k is not None:
                key = torch.cat([self.cache_k, xk], dim=1)
                value = torch.cat([self.cache_v, xv], dim=1)
            keep = key.shape[1] if self.sliding_window is None else self.sliding_window
            self.cache_k, self.cache_v = key[:, -keep:], value[:, -keep:]
            self.pos = start + seqlen
            if seqlen == 1:
                key, value = self.cache_k, self.cache_v  # decode: the whole rotating buffer, no mask

        query = xq.transpose(1, 2)
        key = key.transpose(1, 2)
        value = value.transpose(1, 2)
        scores = torch.matmul(query, key.transpose(2, 3)) * self.scale
        if not (use_cache and seqlen == 1):
            scores = scores + self._mask(positions, key.shape[2], scores.dtype, x.device)[None, None, ...]
        scores = nn.functional.softmax(scores, dim=-1)
        scores = self.dropout(scores)
        output = torch.matmul(scores, value)
        output = output.transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.out_proj(output)
