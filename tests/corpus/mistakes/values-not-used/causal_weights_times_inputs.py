"""CausalAttention: the weights are applied to the inputs x."""
import torch


class CausalAttention:
    def forward(self, x):
        T = x.shape[1]
        scores = self.W_query(x) @ self.W_key(x).transpose(1, 2)
        scores = scores.masked_fill(self.mask[:T, :T], float("-inf")) / scores.new_tensor(self.W_key.out_features).sqrt()
        return self.dropout(scores.softmax(-1)) @ x
