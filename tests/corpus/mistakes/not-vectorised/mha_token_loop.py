"""MultiHeadAttention: attends one query token at a time."""
import torch


class MultiHeadAttention:
    def forward(self, x):
        heads = [p(x).unflatten(-1, (self.num_heads, self.head_dim)).transpose(1, 2)
                 for p in (self.W_query, self.W_key, self.W_value)]
        q, k, v = heads
        rows = []
        for t in range(x.shape[1]):
            scores = q[:, :, t:t + 1] @ k[:, :, :t + 1].transpose(-2, -1) / self.head_dim ** 0.5
            rows.append(self.dropout(torch.softmax(scores, dim=-1)) @ v[:, :, :t + 1])
        return self.out_proj(merge_heads(torch.cat(rows, dim=2)))
