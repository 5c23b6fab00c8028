"""MultiHeadAttention: zeroes the future after the softmax."""
import torch


class MultiHeadAttention:
    def forward(self, x):
        n = x.shape[1]
        q, k, v = (split_heads(w(x), self.num_heads) for w in (self.W_query, self.W_key, self.W_value))
        w = torch.softmax(q @ k.transpose(-1, -2) / self.head_dim ** 0.5, dim=-1)
        w = self.dropout(w.masked_fill(self.mask[:n, :n], 0.0))
        return self.out_proj(merge_heads(w @ v))
