"""FusedQKVAttention: default scale computed from the input width, (dim // num_heads) ** -0.5 as in T2T-ViT, instead of the head size chan // num_heads (right only when dim == chan or qk_scale is given). (written blind, from the contract alone). The blind author filed it as unnamed; the scale is the one thing wrong, so it is wrong-scale."""
import torch
import torch.nn as nn


class FusedQKVAttention(nn.Module):
    def __init__(self, dim, chan, num_heads=1, qkv_bias=False, qk_scale=None):
        super().__init__()
        if chan % num_heads != 0:
            raise ValueError("chan must be divisible by num_heads")
        self.num_heads = num_heads
        self.chan = chan
        head_dim = dim // num_heads
        self.scale = qk_scale or head_dim ** -0.5
        self.qkv = nn.Linear(dim, chan * 3, bias=qkv_bias)
        self.proj = nn.Linear(chan, chan)

    def forward(self, x):
        B, N, _ = x.shape
        H = self.num_heads
        qkv = self.qkv(x).reshape(B, N, 3, H, self.chan // H).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = (q * self.scale) @ k.transpose(-2, -1)
        attn = attn.softmax(dim=-1)
        out = (attn @ v).transpose(1, 2).reshape(B, N, self.chan)
        out = self.proj(out)
        # skip connection through V
        return out + v.transpose(1, 2).reshape(B, N, self.chan)
