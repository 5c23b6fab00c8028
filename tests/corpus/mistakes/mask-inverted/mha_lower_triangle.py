"""MultiHeadAttention: hides the lower triangle below the diagonal."""
import torch


class MultiHeadAttention:
    def forward(self, x):
        B, T, _ = x.shape
        q = split_heads(self.W_query(x), self.num_heads)
        k = split_heads(self.W_key(x), self.num_heads)
        v = split_heads(self.W_value(x), self.num_heads)
        below = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=-1)
        scores = (q @ k.transpose(-1, -2) / self.head_dim ** 0.5).masked_fill(below, -torch.inf)
        return self.out_proj(merge_heads(self.dropout(scores.softmax(-1)) @ v))
