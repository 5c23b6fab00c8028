"""MultiHeadAttention: returns the merged heads without out_proj."""
import math

import torch


class MultiHeadAttention:
    def forward(self, x):
        B, T, _ = x.shape
        heads = lambda t: t.view(B, T, self.num_heads, self.head_dim).permute(0, 2, 1, 3)  # noqa: E731
        att = heads(self.W_query(x)) @ heads(self.W_key(x)).transpose(-1, -2) / math.sqrt(self.head_dim)
        att = att.masked_fill(self.mask[:T, :T], float("-inf")).softmax(-1)
        y = self.dropout(att) @ heads(self.W_value(x))
        return y.permute(0, 2, 1, 3).reshape(B, T, -1)
