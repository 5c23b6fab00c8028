"""SelfAttention_v1: the lesson's steps written out, softmax over the last dim."""
import torch


class SelfAttention_v1:
    def forward(self, x):
        keys = torch.matmul(x, self.W_key)
        queries = torch.matmul(x, self.W_query)
        values = torch.matmul(x, self.W_value)
        attn_scores = queries @ keys.T
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        return attn_weights @ values
