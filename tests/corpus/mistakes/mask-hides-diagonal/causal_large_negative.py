"""CausalAttention: a mask from j >= i, filled with -1e9 instead of -inf."""
import torch


class CausalAttention:
    def forward(self, x):
        T = x.shape[1]
        steps = torch.arange(T, device=x.device)
        att = self.W_query(x) @ self.W_key(x).transpose(-1, -2) * self.W_key.out_features ** -0.5
        att = att.masked_fill(steps[None, :] >= steps[:, None], -1e9)
        return self.dropout(att.softmax(dim=-1)) @ self.W_value(x)
