"""CausalAttention: softmax first, then multiply by a lower-triangular matrix of ones."""
import torch


class CausalAttention:
    def forward(self, x):
        T = x.shape[1]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        weights = torch.softmax(q @ k.transpose(1, 2) / k.shape[-1] ** 0.5, dim=-1)
        weights = weights * torch.tril(torch.ones(T, T, device=x.device))
        return self.dropout(weights) @ v
