"""FusedQKVAttention: unpacks the fused projection as v, q, k."""
import torch


class FusedQKVAttention:
    def forward(self, x):
        v, q, k = split_qkv(self.qkv(x), self.num_heads)
        weights = torch.softmax((q * self.scale) @ k.transpose(-2, -1), dim=-1)
        return self.proj(merge_heads(weights @ v)) + merge_heads(v)
