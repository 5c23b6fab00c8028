"""FusedQKVAttention: T2T-ViT's Attention takes its scale from dim // num_heads, the input width, not the head size chan // num_heads (https://github.com/yitu-opensource/T2T-ViT/issues/62)"""
import torch
from torch import nn


class FusedQKVAttention(nn.Module):
    def __init__(self, dim, chan, num_heads=1, qkv_bias=False, qk_scale=None):
        super().__init__()
        if chan % num_heads:
            raise ValueError("chan % num_heads")
        self.num_heads, self.in_dim = num_heads, chan
        head_dim = dim // num_heads  # the bug: input width, not chan // num_heads
        self.scale = qk_scale or head_dim ** -0.5
        self.qkv = nn.Linear(dim, chan * 3, bias=qkv_bias)
        self.proj = nn.Linear(chan, chan)

    def forward(self, x):
        B, N, C = x.shape
        q, k, v = self.qkv(x).reshape(B, N, 3, self.num_heads, self.in_dim // self.num_heads).permute(2, 0, 3, 1, 4)
        attn = ((q * self.scale) @ k.transpose(-2, -1)).softmax(dim=-1)
        x = self.proj((attn @ v).transpose(1, 2).reshape(B, N, self.in_dim))
        return v.transpose(1, 2).reshape(B, N, self.in_dim) + x
