"""MultiHeadAttentionWithSWA: a rolling buffer of sliding_window_size keys, written first and then attended, as if every call were one token."""
import torch
from torch import nn


class MultiHeadAttentionWithSWA(nn.Module):
    def __init__(self, d_in, d_out, dropout, num_heads, qkv_bias=False, sliding_window_size=None):
        super().__init__()
        if d_out % num_heads:
            raise ValueError("d_out must be divisible by num_heads")
        self.num_heads, self.head_dim = num_heads, d_out // num_heads
        self.window = sliding_window_size
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.reset_cache()

    def reset_cache(self):
        self.cache_k = self.cache_v = None  # [B, T_kept, d_out], heads not split
        self.seen = 0

    def forward(self, x, use_cache=False):
        b, t, _ = x.shape
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        pos_q = torch.arange(t, device=x.device)
        if use_cache:
            if self.cache_k is not None:
                k, v = torch.cat((self.cache_k, k), dim=1), torch.cat((self.cache_v, v), dim=1)
            if self.window is not None and k.shape[1] > self.window:
                k, v = k[:, -self.window:], v[:, -self.window:]  # the buffer holds the window
            self.cache_k, self.cache_v = k, v
            pos_q = pos_q + self.seen
            self.seen += t
        pos_k = torch.arange(pos_q[-1].item() + 1 - k.shape[1], pos_q[-1].item() + 1, device=x.device)
        hidden = pos_k[None, :] > pos_q[:, None]
        if self.window is not None:
            hidden = hidden | (pos_q[:, None] - pos_k[None, :] >= self.window)
        q = q.view(b, t, self.num_heads, self.head_dim).transpose(1, 2)
        k = k.view(b, k.shape[1], self.num_heads, self.head_dim).transpose(1, 2)
        v = v.view(b, v.shape[1], self.num_heads, self.head_dim).transpose(1, 2)
        scores = (q @ k.transpose(-2, -1)) / self.head_dim ** 0.5
        weights = self.dropout(torch.softmax(scores.masked_fill(hidden, float("-inf")), dim=-1))
        return self.out_proj((weights @ v).transpose(1, 2).reshape(b, t, -1))
