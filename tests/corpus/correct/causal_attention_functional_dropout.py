"""CausalAttention: F.dropout told whether the module is training, and a where() for the mask."""
import torch
import torch.nn.functional as F


class CausalAttention:
    def forward(self, x):
        T = x.shape[1]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = torch.where(self.mask[:T, :T].bool(), float("-inf"), q @ k.mT / k.shape[-1] ** 0.5)
        weights = F.dropout(scores.softmax(dim=-1), p=self.dropout.p, training=self.training)
        return weights @ v
