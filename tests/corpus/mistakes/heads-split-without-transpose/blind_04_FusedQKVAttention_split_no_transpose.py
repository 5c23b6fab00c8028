"""FusedQKVAttention: q, k, v are chunked then reshaped straight to [B, H, N, hd] from [B, N, chan] without the transpose, mixing tokens and heads. (written blind, from the contract alone)."""
import torch
import torch.nn as nn


class FusedQKVAttention(nn.Module):
    def __init__(self, dim, chan, num_heads=1, qkv_bias=False, qk_scale=None):
        super().__init__()
        if chan % num_heads != 0:
            raise ValueError("chan must be divisible by num_heads")
        self.num_heads = num_heads
        self.chan = chan
        head_dim = chan // num_heads
        self.scale = qk_scale or head_dim ** -0.5
        self.qkv = nn.Linear(dim, chan * 3, bias=qkv_bias)
        self.proj = nn.Linear(chan, chan)

    def forward(self, x):
        B, N, _ = x.shape
        H = self.num_heads
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q.reshape(B, H, N, self.chan // H)
        k = k.reshape(B, H, N, self.chan // H)
        v = v.reshape(B, H, N, self.chan // H)
        attn = (q * self.scale) @ k.transpose(-2, -1)
        attn = attn.softmax(dim=-1)
        out = (attn @ v).transpose(1, 2).reshape(B, N, self.chan)
        out = self.proj(out)
        # skip connection through V
        return out + v.transpose(1, 2).reshape(B, N, self.chan)
