"""MultiHeadAttention: the weights multiply the keys' heads, which values taken from W_key give too (qkv-swapped): the output cannot tell the two apart, so no id is claimed."""
import torch


class MultiHeadAttention:
    def forward(self, x):
        T = x.shape[1]
        q = split_heads(self.W_query(x), self.num_heads)
        k = split_heads(self.W_key(x), self.num_heads)
        scores = (q @ k.transpose(-1, -2)).masked_fill(self.mask[:T, :T], float("-inf"))
        weights = self.dropout(torch.softmax(scores / self.head_dim ** 0.5, dim=-1))
        return self.out_proj(merge_heads(weights @ k))
