"""MultiHeadAttention: attends one query token at a time."""
import torch


class MultiHeadAttention:
    def forward(self, x):
        T = x.shape[1]
        q = split_heads(self.W_query(x), self.num_heads)
        k = split_heads(self.W_key(x), self.num_heads)
        v = split_heads(self.W_value(x), self.num_heads)
        rows = []
        for t in range(T):
            scores = q[:, :, t:t + 1] @ k[:, :, :t + 1].transpose(-2, -1) / self.head_dim ** 0.5
            rows.append(self.dropout(torch.softmax(scores, dim=-1)) @ v[:, :, :t + 1])
        return self.out_proj(merge_heads(torch.cat(rows, dim=2)))
