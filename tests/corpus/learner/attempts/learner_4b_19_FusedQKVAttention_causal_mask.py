import torch
from torch import nn


class FusedQKVAttention(nn.Module):
    """MISTAKE: copies the causal mask habit from MultiHeadAttention: masks the future although the
    fused block must be non-causal."""

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
        s = (q @ k.transpose(-2, -1)) * self.scale
        N = s.shape[-1]
        s = s.masked_fill(torch.ones(N, N, dtype=torch.bool, device=s.device).triu(1), float("-inf"))
        w = torch.softmax(s, dim=-1)
        out = merge_heads(w @ v)
        return self.proj(out) + merge_heads(v)
