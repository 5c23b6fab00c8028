"""CrossAttention: einsum over any leading dims."""
import torch


class CrossAttention:
    def forward(self, x_q, x_kv):
        q, k, v = self.W_query(x_q), self.W_key(x_kv), self.W_value(x_kv)
        weights = torch.einsum("...id,...jd->...ij", q, k).div(k.shape[-1] ** 0.5).softmax(dim=-1)
        return torch.einsum("...ij,...jd->...id", weights, v)
