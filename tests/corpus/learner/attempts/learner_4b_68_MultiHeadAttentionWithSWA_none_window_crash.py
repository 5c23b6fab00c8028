import torch
from torch import nn


class MultiHeadAttentionWithSWA(nn.Module):
    """MISTAKE: forgets the sliding_window_size=None case with the cache: computes keep = W + T - 1
    unconditionally, which raises TypeError for None."""

    def __init__(self, d_in, d_out, dropout, num_heads, qkv_bias=False, sliding_window_size=None):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError("d_out must be divisible by num_heads")
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.sliding_window_size = sliding_window_size
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
        W = self.sliding_window_size
        q = _heads(self.W_query(x), self.num_heads)
        k = _heads(self.W_key(x), self.num_heads)
        v = _heads(self.W_value(x), self.num_heads)
        start, k_start = 0, 0
        if use_cache:
            start = self.position
            if self.cache_k is not None:
                k = torch.cat([self.cache_k, k], dim=2)
                v = torch.cat([self.cache_v, v], dim=2)
            keep = W + T - 1
            k, v = k[:, :, -keep:], v[:, :, -keep:]
            k_start = start + T - k.shape[2]
            if W is not None:
                self.cache_k, self.cache_v = k[:, :, -W:], v[:, :, -W:]
            else:
                self.cache_k, self.cache_v = k, v
            self.position += T
        hidden = sliding_window_mask(T, k.shape[2], W, q_start=start, k_start=k_start, device=x.device)
        return self.out_proj(_attend(q, k, v, hidden, self.dropout))
