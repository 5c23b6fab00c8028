"""FusedQKVAttention: unflatten(-1,(3,H,hd)) + unbind, einsum over heads without any permute, flatten(-2) to merge, works for any leading dims. (written blind, from the contract alone)."""
import torch
import torch.nn as nn


class FusedQKVAttention(nn.Module):
    def __init__(self, dim, chan, num_heads=1, qkv_bias=False, qk_scale=None):
        super().__init__()
        if chan % num_heads:
            raise ValueError(f"chan ({chan}) is not divisible by num_heads ({num_heads})")
        self.dim = dim
        self.chan = chan
        self.num_heads = num_heads
        self.head_dim = chan // num_heads
        self.scale = qk_scale or self.head_dim ** -0.5
        self.qkv = nn.Linear(dim, 3 * chan, bias=qkv_bias)
        self.proj = nn.Linear(chan, chan)

    def forward(self, x):
        # x: [..., N, dim]; the fused output holds q | k | v, each split into heads
        qkv = self.qkv(x).unflatten(-1, (3, self.num_heads, self.head_dim))
        q, k, v = qkv.unbind(dim=-3)  # each [..., N, H, hd]
        scores = torch.einsum("...nhd,...mhd->...hnm", q, k) * self.scale
        weights = torch.softmax(scores, dim=-1)
        ctx = torch.einsum("...hnm,...mhd->...nhd", weights, v)
        return self.proj(ctx.flatten(-2)) + v.flatten(-2)
