"""CausalAttention: queries and values read from each other's projection."""
import torch


class CausalAttention:
    def forward(self, x):
        T = x.shape[1]
        values, keys, queries = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = torch.bmm(queries, keys.transpose(1, 2)) / keys.shape[-1] ** 0.5
        scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))
        return torch.bmm(self.dropout(torch.softmax(scores, -1)), values)
