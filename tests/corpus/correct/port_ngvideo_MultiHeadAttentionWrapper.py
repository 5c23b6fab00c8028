"""MultiHeadAttentionWrapper: port of karpathy/ng-video-lecture gpt.py MultiHeadAttention (nn.ModuleList of heads, torch.cat along the last dim; without its proj, as the contract asks, over the course's CausalAttention)"""
import torch
from torch import nn

from causal_attention import CausalAttention


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([h(x) for h in self.heads], dim=-1)
