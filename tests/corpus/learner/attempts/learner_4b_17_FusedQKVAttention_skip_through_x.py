import torch
from torch import nn


class FusedQKVAttention(nn.Module):
    """MISTAKE: adds the usual residual x instead of the merged values v (fails when dim != chan,
    wrong values when dim == chan)."""

    def __init__(self, dim, chan, num_heads=1, qkv_bias=False, qk_scale=None):
        super().__init__()
        if chan % num_heads != 0:
            raise ValueError("chan must be divisible by num_heads")
        self.num_heads = num_heads
        head_dim = chan // num_heads
        self.scale = qk_scale or head_dim ** -0.5
        self.qkv = nn.Linear(dim, 3 * chan, bias=qkv_bias)
        self.proj = nn.Linear(chan, chan)

    def forward(self, x):
        q, k, v = split_qkv(self.qkv(x), self.num_heads)
        w = torch.softmax((q @ k.transpose(-2, -1)) * self.scale, dim=-1)
        out = merge_heads(w @ v)
        return self.proj(out) + x
