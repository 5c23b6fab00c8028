"""MultiHeadAttentionWrapper: Keeps a ModuleList of causal heads but runs them all at once in float64 by stacking their weights, with an additive -inf bias for the causal mask, and casts back to the input dtype. (written blind, from the contract alone)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class _CausalAttention(nn.Module):
    """Holds one head's parameters; the wrapper runs all heads at once."""

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer(
            "mask", torch.triu(torch.ones(context_length, context_length), diagonal=1)
        )

    def forward(self, x):
        T = x.shape[1]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = q @ k.mT / k.shape[-1] ** 0.5
        scores = scores.masked_fill(self.mask[:T, :T].bool(), float("-inf"))
        return self.dropout(scores.softmax(-1)) @ v


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.num_heads = num_heads
        self.d_out = d_out
        self.heads = nn.ModuleList(
            _CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
            for _ in range(num_heads)
        )

    def _project(self, x64, name):
        # stack the heads' weights: [H, d_out, d_in]; output [B, H, T, d_out]
        W = torch.stack([getattr(h, name).weight for h in self.heads]).to(torch.float64)
        out = torch.einsum("btd,hod->bhto", x64, W)
        if getattr(self.heads[0], name).bias is not None:
            b = torch.stack([getattr(h, name).bias for h in self.heads]).to(torch.float64)
            out = out + b[None, :, None, :]
        return out

    def forward(self, x):
        B, T, _ = x.shape
        x64 = x.to(torch.float64)
        q = self._project(x64, "W_query")
        k = self._project(x64, "W_key")
        v = self._project(x64, "W_value")
        scores = q @ k.transpose(-2, -1) / self.d_out ** 0.5
        future = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        bias = torch.zeros(T, T, dtype=torch.float64, device=x.device)
        bias = bias.masked_fill(future, float("-inf"))
        weights = torch.softmax(scores + bias, dim=-1)
        p = self.heads[0].dropout.p
        weights = F.dropout(weights, p=p, training=self.training)
        ctx = weights @ v  # [B, H, T, d_out]
        out = ctx.permute(0, 2, 1, 3).reshape(B, T, self.num_heads * self.d_out)
        return out.to(x.dtype)
