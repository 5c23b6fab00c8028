"""MultiHeadAttention: scaled by the model width d_out instead of the head size."""
import math

import torch


class MultiHeadAttention:
    def forward(self, x):
        T = x.shape[1]
        heads = [split_heads(proj(x), self.num_heads) for proj in (self.W_query, self.W_key, self.W_value)]
        q, k, v = heads
        scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(self.d_out)
        scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))
        return self.out_proj(merge_heads(self.dropout(scores.softmax(-1)) @ v))
