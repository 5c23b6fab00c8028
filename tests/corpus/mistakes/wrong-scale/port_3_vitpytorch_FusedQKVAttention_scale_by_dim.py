"""FusedQKVAttention: the scale is dim ** -0.5 with dim the input width, not head_dim ** -0.5 (wrong-scale).

Source: https://github.com/lucidrains/vit-pytorch/blob/85314cf^/vit_pytorch/vit_pytorch.py (Attention before the fix)
Bug report: https://github.com/lucidrains/vit-pytorch/issues/65 (fixed in commit 85314cf "patch for scaling factor").
Port: to_qkv chunked in 3, 'b n (h d) -> b h n d', einsum('bhid,bhjd->bhij') * self.scale, softmax,
einsum('bhij,bhjd->bhid'), 'b h n d -> b n (h d)', to_out; course names, rearrange as view/transpose, the course's
skip through v; scale kept as dim ** -0.5 (qk_scale still overrides, as the contract's signature has it).
"""
import torch
from torch import nn


class FusedQKVAttention(nn.Module):
    def __init__(self, dim, chan, num_heads=1, qkv_bias=False, qk_scale=None):
        super().__init__()
        if chan % num_heads:
            raise ValueError("chan must be divisible by num_heads")
        inner_dim = chan
        self.heads = num_heads
        self.scale = qk_scale or dim ** -0.5

        self.qkv = nn.Linear(dim, inner_dim * 3, bias = qkv_bias)
        self.proj = nn.Linear(inner_dim, chan)

    def forward(self, x):
        b, n, _, h = *x.shape, self.heads
        qkv = self.qkv(x).chunk(3, dim = -1)
        q, k, v = map(lambda t: t.view(b, n, h, -1).transpose(1, 2), qkv)

        dots = torch.einsum('bhid,bhjd->bhij', q, k) * self.scale

        attn = dots.softmax(dim=-1)

        out = torch.einsum('bhij,bhjd->bhid', attn, v)
        out = out.transpose(1, 2).reshape(b, n, -1)
        out = self.proj(out)
        return out + v.transpose(1, 2).reshape(b, n, -1)
