"""SelfAttention_v2: Runs F.linear with float64 copies of the weights, transpose(-2, -1), F.softmax, scale self.d_out**0.5, then casts the result back to the input dtype. (written blind, from the contract alone)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    @staticmethod
    def _project(layer, x):
        b = layer.bias.double() if layer.bias is not None else None
        return F.linear(x, layer.weight.double(), b)

    def forward(self, x):
        in_dtype = x.dtype
        xd = x.double()
        q = self._project(self.W_query, xd)
        k = self._project(self.W_key, xd)
        v = self._project(self.W_value, xd)

        scores = q.matmul(k.transpose(-2, -1)).div(self.d_out ** 0.5)
        weights = F.softmax(scores, dim=-1)
        return weights.matmul(v).to(in_dtype)
