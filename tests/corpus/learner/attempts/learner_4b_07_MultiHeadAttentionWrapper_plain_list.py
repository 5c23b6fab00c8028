import torch
from torch import nn


class MultiHeadAttentionWrapper(nn.Module):
    """MISTAKE: keeps the heads in a plain Python list instead of nn.ModuleList, so the heads'
    parameters are not registered (state_dict/parameters/.eval()/.to() miss them)."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        from causal_attention import CausalAttention
        self.heads = [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)
