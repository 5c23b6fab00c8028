"""FusedQKVAttention: port of huggingface/pytorch-image-models timm/layers/attention.py Attention.forward, non-fused path (q * scale, q @ kᵀ, softmax, attn @ v, transpose/reshape, proj), with T2T-ViT's skip through v; its split_qkv beside it)"""
from torch import nn


def split_qkv(qkv, num_heads):
    B, N, C3 = qkv.shape
    if C3 % 3 != 0 or (C3 // 3) % num_heads != 0:
        raise ValueError("qkv width must be 3 * a multiple of num_heads")
    head_dim = C3 // 3 // num_heads
    q, k, v = qkv.reshape(B, N, 3, num_heads, head_dim).permute(2, 0, 3, 1, 4).unbind(0)
    return q, k, v


class FusedQKVAttention(nn.Module):
    def __init__(self, dim, chan, num_heads=1, qkv_bias=False, qk_scale=None):
        super().__init__()
        if chan % num_heads != 0:
            raise ValueError("chan should be divisible by num_heads")
        self.num_heads = num_heads
        self.head_dim = chan // num_heads
        self.chan = chan
        self.scale = qk_scale or self.head_dim ** -0.5
        self.qkv = nn.Linear(dim, chan * 3, bias=qkv_bias)
        self.proj = nn.Linear(chan, chan)

    def forward(self, x):
        B, N, C = x.shape
        q, k, v = split_qkv(self.qkv(x), self.num_heads)
        q = q * self.scale
        attn = q @ k.transpose(-2, -1)
        attn = attn.softmax(dim=-1)
        out = (attn @ v).transpose(1, 2).reshape(B, N, self.chan)
        out = self.proj(out)
        return out + v.transpose(1, 2).reshape(B, N, self.chan)
