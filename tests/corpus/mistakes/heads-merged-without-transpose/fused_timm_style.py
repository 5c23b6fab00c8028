"""FusedQKVAttention: written the way timm's Attention block is, but the attended heads are merged back with a reshape and no transpose."""
import torch


class FusedQKVAttention:
    def forward(self, x):
        B, N, _ = x.shape
        C = self.proj.in_features
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        attn = (q @ k.transpose(-2, -1)) * self.scale
        attn = attn.softmax(dim=-1)
        out = (attn @ v).reshape(B, N, C)
        return self.proj(out) + v.transpose(1, 2).reshape(B, N, C)
