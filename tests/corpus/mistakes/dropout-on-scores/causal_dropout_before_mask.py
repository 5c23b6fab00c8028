"""CausalAttention: dropout before the mask is applied."""
import torch


class CausalAttention:
    def forward(self, x):
        n = x.shape[1]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        s = self.dropout(q @ k.transpose(1, 2) / k.shape[-1] ** 0.5)
        s = s.masked_fill(self.mask[:n, :n], float("-inf"))
        return torch.softmax(s, dim=-1) @ v
