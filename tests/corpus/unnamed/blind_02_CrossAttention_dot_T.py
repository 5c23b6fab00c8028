"""CrossAttention: Book-style code using `keys.T` (as in the lesson's unbatched code), which works without batch dims but fails or is wrong with leading batch dims. (written blind, from the contract alone). The blind author filed it as unnamed."""
import torch
from torch import nn


class CrossAttention(nn.Module):
    def __init__(self, d_in_q, d_in_kv, d_k, d_v, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in_q, d_k, bias=qkv_bias)
        self.W_key = nn.Linear(d_in_kv, d_k, bias=qkv_bias)
        self.W_value = nn.Linear(d_in_kv, d_v, bias=qkv_bias)

    def forward(self, x_q, x_kv):
        queries = self.W_query(x_q)
        keys = self.W_key(x_kv)
        values = self.W_value(x_kv)
        # `.T` reverses every dim: right for [T, d] inputs only, wrong once there are batch dims.
        attn_scores = queries @ keys.T
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        return attn_weights @ values
