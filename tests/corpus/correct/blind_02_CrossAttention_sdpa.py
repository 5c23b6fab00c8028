"""CrossAttention: Flattens the leading dims with `reshape` and calls `F.scaled_dot_product_attention` (allowed for this row), then restores the batch shape. (written blind, from the contract alone)."""
import torch
import torch.nn.functional as F
from torch import nn


class CrossAttention(nn.Module):
    def __init__(self, d_in_q, d_in_kv, d_k, d_v, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in_q, d_k, bias=qkv_bias)
        self.W_key = nn.Linear(d_in_kv, d_k, bias=qkv_bias)
        self.W_value = nn.Linear(d_in_kv, d_v, bias=qkv_bias)

    def forward(self, x_q, x_kv):
        q = self.W_query(x_q)
        k = self.W_key(x_kv)
        v = self.W_value(x_kv)
        # Fold any leading batch dims (zero included) into one so SDPA sees [B, T, d].
        batch_shape = q.shape[:-2]
        Tq = q.shape[-2]
        q = q.reshape(-1, Tq, q.shape[-1])
        k = k.reshape(-1, k.shape[-2], k.shape[-1])
        v = v.reshape(-1, v.shape[-2], v.shape[-1])
        out = F.scaled_dot_product_attention(q, k, v)  # default scale is 1/sqrt(d_k)
        return out.reshape(*batch_shape, Tq, out.shape[-1])
