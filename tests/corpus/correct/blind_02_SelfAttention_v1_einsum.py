"""SelfAttention_v1: All projections and products written with torch.einsum and a hand-written max-subtracted softmax, scale math.sqrt(d_k). (written blind, from the contract alone)."""
import math

import torch
import torch.nn as nn


class SelfAttention_v1(nn.Module):
    """Self-attention with raw weight matrices, written with einsum and a
    hand-rolled, max-subtracted softmax."""

    def __init__(self, d_in, d_out):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    @staticmethod
    def _stable_softmax(s):
        s = s - s.amax(dim=-1, keepdim=True).detach()
        e = s.exp()
        return e / e.sum(dim=-1, keepdim=True)

    def forward(self, x):
        q = torch.einsum("td,de->te", x, self.W_query)
        k = torch.einsum("td,de->te", x, self.W_key)
        v = torch.einsum("td,de->te", x, self.W_value)

        scores = torch.einsum("ie,je->ij", q, k) / math.sqrt(k.shape[-1])
        weights = self._stable_softmax(scores)
        return torch.einsum("ij,je->ie", weights, v)
