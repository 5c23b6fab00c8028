"""MultiHeadAttention: the causal buffer is applied without slicing it to the sequence."""
import torch


class MultiHeadAttention:
    def forward(self, x):
        q = split_heads(self.W_query(x), self.num_heads)
        k = split_heads(self.W_key(x), self.num_heads)
        v = split_heads(self.W_value(x), self.num_heads)
        scores = (q @ k.transpose(-2, -1)).masked_fill(self.mask, -torch.inf)
        weights = self.dropout(torch.softmax(scores * self.head_dim ** -0.5, dim=-1))
        return self.out_proj(merge_heads(weights @ v))
