"""MultiHeadAttention: Splits heads with reshape + permute and calls F.scaled_dot_product_attention(is_causal=True) with dropout_p only in training mode (the 04 row does not forbid it), then permute + reshape and out_proj. (written blind, from the contract alone)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    """Multi-head causal attention on top of PyTorch's fused kernel."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads:
            raise ValueError("d_out must be a multiple of num_heads")
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.context_length = context_length
        self.dropout_p = dropout
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)

    def forward(self, x):
        B, T, _ = x.shape
        # [B, T, D] -> [B, H, T, hd]
        q = self.W_query(x).reshape(B, T, self.num_heads, self.head_dim).permute(0, 2, 1, 3)
        k = self.W_key(x).reshape(B, T, self.num_heads, self.head_dim).permute(0, 2, 1, 3)
        v = self.W_value(x).reshape(B, T, self.num_heads, self.head_dim).permute(0, 2, 1, 3)

        ctx = F.scaled_dot_product_attention(
            q, k, v,
            attn_mask=None,
            dropout_p=self.dropout_p if self.training else 0.0,
            is_causal=True,
        )
        ctx = ctx.permute(0, 2, 1, 3).reshape(B, T, self.d_out)
        return self.out_proj(ctx)
