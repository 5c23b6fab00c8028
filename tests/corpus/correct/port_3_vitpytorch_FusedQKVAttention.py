"""FusedQKVAttention ported from lucidrains/vit-pytorch vit_pytorch/vit.py Attention.

Source: https://github.com/lucidrains/vit-pytorch/blob/main/vit_pytorch/vit.py (class Attention)
Kept: to_qkv = Linear(dim, inner_dim * 3) chunked in 3 along the last dim, 'b n (h d) -> b h n d',
dots = matmul(q, kᵀ) * scale with scale = dim_head ** -0.5, nn.Softmax(dim=-1), matmul with v,
'b h n d -> b n (h d)', to_out Linear(inner_dim, ...).
Adapted: course names (to_qkv -> qkv, to_out -> proj: Linear(chan, chan)), qk_scale override, no LayerNorm, no
dropout, einops.rearrange written as view/transpose (einops is not installed), and the course's skip through v
(proj(out) + v merged back), as T2T-ViT's token transformer does.
"""
import torch
from torch import nn


class FusedQKVAttention(nn.Module):
    def __init__(self, dim, chan, num_heads=1, qkv_bias=False, qk_scale=None):
        super().__init__()
        if chan % num_heads:
            raise ValueError("chan must be divisible by num_heads")
        dim_head = chan // num_heads
        inner_dim = dim_head * num_heads

        self.heads = num_heads
        self.scale = qk_scale or dim_head ** -0.5

        self.attend = nn.Softmax(dim = -1)

        self.qkv = nn.Linear(dim, inner_dim * 3, bias = qkv_bias)
        self.proj = nn.Linear(inner_dim, chan)

    def _b_n_hd_to_b_h_n_d(self, t):
        b, n, _ = t.shape
        return t.view(b, n, self.heads, -1).transpose(1, 2)

    def _b_h_n_d_to_b_n_hd(self, t):
        b, h, n, d = t.shape
        return t.transpose(1, 2).reshape(b, n, h * d)

    def forward(self, x):
        qkv = self.qkv(x).chunk(3, dim = -1)
        q, k, v = map(self._b_n_hd_to_b_h_n_d, qkv)

        dots = torch.matmul(q, k.transpose(-1, -2)) * self.scale

        attn = self.attend(dots)

        out = torch.matmul(attn, v)
        out = self._b_h_n_d_to_b_n_hd(out)
        return self.proj(out) + self._b_h_n_d_to_b_n_hd(v)
