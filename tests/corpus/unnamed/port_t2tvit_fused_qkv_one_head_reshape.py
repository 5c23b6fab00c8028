"""FusedQKVAttention: T2T-ViT's qkv.reshape(B, N, 3, num_heads, in_dim) gives each head in_dim features (and v.squeeze(1) + x), so only num_heads == 1 works (https://github.com/yitu-opensource/T2T-ViT/issues/68)"""
import torch
from torch import nn


class FusedQKVAttention(nn.Module):
    def __init__(self, dim, chan, num_heads=1, qkv_bias=False, qk_scale=None):
        super().__init__()
        if chan % num_heads:
            raise ValueError("chan % num_heads")
        self.num_heads, self.in_dim = num_heads, chan
        self.scale = qk_scale or (chan // num_heads) ** -0.5
        self.qkv = nn.Linear(dim, chan * 3, bias=qkv_bias)
        self.proj = nn.Linear(chan, chan)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.in_dim).permute(2, 0, 3, 1, 4)  # the bug
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = ((q * self.scale) @ k.transpose(-2, -1)).softmax(dim=-1)
        x = (attn @ v).transpose(1, 2).reshape(B, N, self.in_dim)
        x = self.proj(x)
        return v.squeeze(1) + x
