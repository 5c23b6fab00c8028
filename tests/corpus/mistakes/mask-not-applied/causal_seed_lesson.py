"""CausalAttention: the seed lesson's attn_score.masked_fill(...), whose result is thrown away."""
import torch


class CausalAttention:
    def forward(self, x):
        T = x.shape[1]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        attn_score = q @ k.transpose(1, 2)
        attn_score.masked_fill(self.mask.bool()[:T, :T], -torch.inf)
        attn_weight = torch.softmax(attn_score / k.shape[-1] ** 0.5, dim=-1)
        return self.dropout(attn_weight) @ v
