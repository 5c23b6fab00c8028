"""CausalAttention: dropout on the masked scores, then the softmax."""
import torch


class CausalAttention:
    def forward(self, x):
        n = x.shape[1]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = (q @ k.transpose(1, 2)).masked_fill(self.mask[:n, :n], float("-inf")) / k.shape[-1] ** 0.5
        scores = self.dropout(scores)
        return torch.softmax(scores, dim=-1) @ v
