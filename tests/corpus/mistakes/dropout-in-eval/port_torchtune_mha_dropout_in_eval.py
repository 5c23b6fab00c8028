"""MultiHeadAttention: torchtune's MultiHeadAttention passes dropout_p=self.attn_dropout to scaled_dot_product_attention whatever the mode, so attention dropout stays on in eval (https://github.com/meta-pytorch/torchtune/issues/1791)"""
import torch
from torch import nn
from torch.nn import functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads:
            raise ValueError("d_out % num_heads")
        self.h, self.d_out = num_heads, d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.attn_dropout = dropout

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (l(x).view(B, T, self.h, C and self.d_out // self.h).transpose(1, 2)
                   for l in (self.W_query, self.W_key, self.W_value))
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=self.attn_dropout, is_causal=True)  # the bug
        return self.out_proj(y.transpose(1, 2).contiguous().view(B, T, self.d_out))
