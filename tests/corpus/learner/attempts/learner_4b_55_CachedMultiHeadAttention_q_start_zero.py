import torch
from torch import nn


class CachedMultiHeadAttention(nn.Module):
    """MISTAKE: cache position: masks every call with q_start=0 (the queries are treated as the first
    positions), so a chunk after cached tokens hides keys it should see."""

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
        start = 0
        if use_cache:
            start = self.position
            if self.cache_k is not None:
                k = torch.cat([self.cache_k, k], dim=2)
                v = torch.cat([self.cache_v, v], dim=2)
            self.cache_k, self.cache_v = k, v
            self.position += T
        hidden = sliding_window_mask(T, k.shape[2], None, device=x.device)
        return self.out_proj(_attend(q, k, v, hidden, self.dropout))
