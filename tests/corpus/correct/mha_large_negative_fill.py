"""MultiHeadAttention: the causal mask filled with the dtype's lowest value instead of -inf."""
import torch


class MultiHeadAttention:
    def forward(self, x):
        T = x.shape[1]
        q, k, v = (split_heads(w(x), self.num_heads) for w in (self.W_query, self.W_key, self.W_value))
        scores = (q @ k.transpose(-2, -1)) / self.head_dim ** 0.5
        scores = scores.masked_fill(self.mask[:T, :T], torch.finfo(scores.dtype).min)
        return self.out_proj(merge_heads(self.dropout(scores.softmax(-1)) @ v))
