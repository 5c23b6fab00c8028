"""FusedQKVAttention: chunk the fused projection into q, k, v, then split each into heads."""
import torch


class FusedQKVAttention:
    def forward(self, x):
        B, N, _ = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        heads = lambda t: t.reshape(B, N, self.num_heads, -1).transpose(1, 2)  # noqa: E731
        q, k, v = heads(q), heads(k), heads(v)
        attended = torch.softmax(q @ k.transpose(-1, -2) * self.scale, dim=-1) @ v
        merge = lambda t: t.transpose(1, 2).reshape(B, N, -1)  # noqa: E731
        return self.proj(merge(attended)) + merge(v)
