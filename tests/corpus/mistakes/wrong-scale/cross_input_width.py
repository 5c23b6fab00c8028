"""CrossAttention: scaled by the width of the key/value input instead of d_k."""
import torch


class CrossAttention:
    def forward(self, x_q, x_kv):
        q, k, v = self.W_query(x_q), self.W_key(x_kv), self.W_value(x_kv)
        scores = q @ k.transpose(-2, -1) / x_kv.shape[-1] ** 0.5
        return torch.softmax(scores, dim=-1) @ v
