"""MultiHeadAttention: merges the heads with a reshape of the [B, H, T, hd] context."""
import torch


class MultiHeadAttention:
    def forward(self, x):
        B, T, _ = x.shape
        q = self.W_query(x).unflatten(-1, (self.num_heads, self.head_dim)).transpose(1, 2)
        k = self.W_key(x).unflatten(-1, (self.num_heads, self.head_dim)).transpose(1, 2)
        v = self.W_value(x).unflatten(-1, (self.num_heads, self.head_dim)).transpose(1, 2)
        scores = (q @ k.transpose(-2, -1)).masked_fill(self.mask[:T, :T], -torch.inf)
        weights = self.dropout(torch.softmax(scores / self.head_dim ** 0.5, dim=-1))
        context = (weights @ v).reshape(B, T, self.d_out)
        return self.out_proj(context)
