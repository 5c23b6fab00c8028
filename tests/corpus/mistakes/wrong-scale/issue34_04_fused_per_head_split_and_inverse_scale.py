"""FusedQKVAttention: two stacked mistakes: q, k, v split with the per-head layout reshape(B, N, H, 3, hd) and the scores divided by the scale (multiplied by sqrt(head_dim)) (issue 34, item 8)."""
import torch
import torch.nn as nn


class FusedQKVAttention(nn.Module):
    def forward(self, x):
        B, N, _ = x.shape
        H = self.num_heads
        qkv = self.qkv(x).reshape(B, N, H, 3, -1).permute(3, 0, 2, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        weights = torch.softmax((q @ k.transpose(-2, -1)) / self.scale, dim=-1)
        attended = (weights @ v).transpose(1, 2).reshape(B, N, -1)
        return self.proj(attended) + v.transpose(1, 2).reshape(B, N, -1)
