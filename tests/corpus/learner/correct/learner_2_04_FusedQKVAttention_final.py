"""FusedQKVAttention: Final correct version (helpers included)."""
import torch
from torch import nn


def merge_heads(x):
    """The inverse of ``split_heads``: concatenate the heads' features again.

    x: [B, H, T, hd]  ->  [B, T, H*hd], also for non-contiguous ``x``.
    Lesson section 2, "Splitting into heads".
    """
    B, H, T, hd = x.shape
    return x.transpose(1, 2).reshape(B, T, H * hd)


def split_qkv(qkv, num_heads):
    """Split a fused projection into per-head queries, keys and values.

    qkv: [B, T, 3D] laid out as reshape(B, T, 3, H, D/H).permute(2, 0, 3, 1, 4)
    ->  (q, k, v), each [B, H, T, D/H]. Raise ValueError if 3D is not 3 * a multiple of num_heads.
    Lesson section 5, "Fused QKV".
    """
    B, T, D3 = qkv.shape
    if D3 % (3 * num_heads) != 0:
        raise ValueError(f"{D3} is not 3 * a multiple of num_heads = {num_heads}")
    hd = D3 // (3 * num_heads)
    q, k, v = qkv.reshape(B, T, 3, num_heads, hd).permute(2, 0, 3, 1, 4)
    return q, k, v


class FusedQKVAttention(nn.Module):
    """Non-causal multi-head attention with one fused projection and a skip connection through V.

    ``qkv``: ``Linear(dim, 3*chan, bias=qkv_bias)``, laid out as in ``split_qkv``; ``proj``:
    ``Linear(chan, chan)``. Scores are scaled by ``qk_scale or head_dim**-0.5``, head_dim =
    chan / num_heads. Output: proj(attention) + v, with v merged back to [B, N, chan] (the skip
    connection runs through V because the input has ``dim`` features, not ``chan``).
    Raise ValueError at construction if chan is not divisible by num_heads.
    forward(x [B, N, dim]) -> [B, N, chan]. Lesson section 5, "Fused QKV".
    """

    def __init__(self, dim, chan, num_heads=1, qkv_bias=False, qk_scale=None):
        super().__init__()
        if chan % num_heads != 0:
            raise ValueError("chan must be divisible by num_heads")
        self.num_heads = num_heads
        self.head_dim = chan // num_heads
        self.scale = qk_scale or self.head_dim ** -0.5
        self.qkv = nn.Linear(dim, 3 * chan, bias=qkv_bias)
        self.proj = nn.Linear(chan, chan)

    def forward(self, x):
        q, k, v = split_qkv(self.qkv(x), self.num_heads)
        weights = torch.softmax(q @ k.transpose(-2, -1) * self.scale, dim=-1)
        out = self.proj(merge_heads(weights @ v))
        return out + merge_heads(v)
