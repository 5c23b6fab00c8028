"""MultiHeadAttention: einsum throughout, an arange-comparison mask, unflatten for the heads."""
import torch


class MultiHeadAttention:
    def forward(self, x):
        T = x.shape[1]
        q, k, v = (w(x).unflatten(-1, (self.num_heads, self.head_dim)) for w in (self.W_query, self.W_key, self.W_value))
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / self.head_dim ** 0.5
        pos = torch.arange(T, device=x.device)
        scores = scores.masked_fill(pos[None, :] > pos[:, None], float("-inf"))
        weights = self.dropout(scores.softmax(dim=-1))
        context = torch.einsum("bhqk,bkhd->bqhd", weights, v).flatten(2)
        return self.out_proj(context)
