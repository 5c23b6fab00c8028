"""FusedQKVAttention: port of yitu-opensource/T2T-ViT models/token_transformer.py Attention (qkv.reshape(B, N, 3, H, hd).permute(2, 0, 3, 1, 4), (q * scale) @ kᵀ, softmax, proj, the skip through v; head size from chan, several heads)"""
from torch import nn


class FusedQKVAttention(nn.Module):
    def __init__(self, dim, chan, num_heads=1, qkv_bias=False, qk_scale=None):
        super().__init__()
        if chan % num_heads != 0:
            raise ValueError("chan must be divisible by num_heads")
        self.num_heads = num_heads
        self.in_dim = chan
        head_dim = chan // num_heads  # T2T-ViT uses dim // num_heads (its issue #62); the contract says chan
        self.scale = qk_scale or head_dim ** -0.5
        self.qkv = nn.Linear(dim, chan * 3, bias=qkv_bias)
        self.proj = nn.Linear(chan, chan)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.in_dim // self.num_heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = (q * self.scale) @ k.transpose(-2, -1)
        attn = attn.softmax(dim=-1)
        x = (attn @ v).transpose(1, 2).reshape(B, N, self.in_dim)
        x = self.proj(x)
        # skip connection through v (v.squeeze(1) for one head; merged heads in general)
        x = v.transpose(1, 2).reshape(B, N, self.in_dim) + x
        return x
