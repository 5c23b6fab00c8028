"""MultiHeadAttention: calls dropout with training=True."""
import torch
from torch.nn import functional as F


class MultiHeadAttention:
    def forward(self, x):
        T = x.shape[1]
        q = split_heads(self.W_query(x), self.num_heads)
        k = split_heads(self.W_key(x), self.num_heads)
        v = split_heads(self.W_value(x), self.num_heads)
        scores = (q @ k.transpose(-2, -1)).masked_fill(self.mask[:T, :T], -torch.inf) / self.head_dim**0.5
        weights = F.dropout(scores.softmax(dim=-1), self.dropout.p, training=True)
        return self.out_proj(merge_heads(weights @ v))
