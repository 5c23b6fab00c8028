"""CrossAttention: port of facebookresearch/fairseq fairseq/modules/multihead_attention.py MultiheadAttention encoder-decoder attention (q_proj on the queries' sequence, k_proj/v_proj on the other, q *= d_k**-0.5; one head, no out_proj)"""
import torch
from torch import nn


class CrossAttention(nn.Module):
    def __init__(self, d_in_q, d_in_kv, d_k, d_v, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in_q, d_k, bias=qkv_bias)
        self.W_key = nn.Linear(d_in_kv, d_k, bias=qkv_bias)
        self.W_value = nn.Linear(d_in_kv, d_v, bias=qkv_bias)
        self.scaling = d_k ** -0.5

    def forward(self, x_q, x_kv):
        q = self.W_query(x_q)
        k = self.W_key(x_kv)
        v = self.W_value(x_kv)
        q = q * self.scaling
        attn_weights = torch.matmul(q, k.transpose(-2, -1))
        attn_probs = torch.softmax(attn_weights, dim=-1)
        return torch.matmul(attn_probs, v)
