"""MultiHeadAttentionWrapper: Final correct version (uses CausalAttention from 03)."""
import torch
from torch import nn


class MultiHeadAttentionWrapper(nn.Module):
    """``num_heads`` independent ``CausalAttention(d_in, d_out, ...)`` heads, outputs concatenated.

    ``heads``: ``nn.ModuleList`` of the heads. forward(x [B, T, d_in]) -> [B, T, num_heads*d_out],
    head 0's features first. Lesson section 1, "Stacking single heads".
    """

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        from causal_attention import CausalAttention
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)
