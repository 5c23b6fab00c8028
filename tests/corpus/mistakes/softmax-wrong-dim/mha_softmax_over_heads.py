"""MultiHeadAttention: softmax(dim=1) on the [B, H, T, T] scores."""
import torch


class MultiHeadAttention:
    def forward(self, x):
        T = x.shape[1]
        q, k, v = (split_heads(w(x), self.num_heads) for w in (self.W_query, self.W_key, self.W_value))
        scores = torch.matmul(q, k.transpose(2, 3)) / self.head_dim ** 0.5
        scores = scores.masked_fill(self.mask[:T, :T], -float("inf"))
        weights = self.dropout(torch.softmax(scores, dim=1))
        return self.out_proj(merge_heads(torch.matmul(weights, v)))
