"""FusedQKVAttention: two stacked mistakes, one in the student's own split_qkv (the per-head layout reshape(B, T, H, 3, hd)) and one in the block (the scores divided by the scale, i.e. multiplied by sqrt(head_dim)) (issue 34, item 8)."""
import torch
import torch.nn as nn


def split_qkv(qkv, num_heads):
    B, T, three_d = qkv.shape
    if three_d % (3 * num_heads):
        raise ValueError("not divisible")
    q, k, v = qkv.reshape(B, T, num_heads, 3, three_d // (3 * num_heads)).permute(3, 0, 2, 1, 4)
    return q, k, v


class FusedQKVAttention(nn.Module):
    def forward(self, x):
        q, k, v = split_qkv(self.qkv(x), self.num_heads)
        weights = torch.softmax((q @ k.transpose(-2, -1)) / self.scale, dim=-1)
        return self.proj(merge_heads(weights @ v)) + merge_heads(v)
