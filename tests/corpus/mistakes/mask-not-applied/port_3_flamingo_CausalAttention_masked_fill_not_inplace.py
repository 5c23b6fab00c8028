"""CausalAttention: sim.masked_fill(...) result is dropped (not in place), so the mask has no effect (mask-not-applied).

Source: https://github.com/lucidrains/flamingo-pytorch/blob/749f8244794002371913d2fc4e7411afd5eddc67/flamingo_pytorch/flamingo_pytorch.py#L179
Bug report: https://github.com/lucidrains/flamingo-pytorch/issues/10 (fixed in commit 10913ab).
Port: lucidrains style (q * scale, einsum 'b i d, b j d -> b i j', -finfo.max mask value, sim - amax, softmax,
einsum with v); the masked_fill call whose result is discarded is kept; the text-to-media mask is the causal mask.
"""
import torch
from torch import nn, einsum


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.scale = d_out ** -0.5
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.ones(context_length, context_length, dtype=torch.bool).tril())

    def forward(self, x):
        n = x.shape[1]
        q = self.W_query(x) * self.scale
        k, v = self.W_key(x), self.W_value(x)

        sim = einsum('b i d, b j d -> b i j', q, k)

        text_to_media_mask = self.mask[:n, :n]
        sim.masked_fill(~text_to_media_mask, -torch.finfo(sim.dtype).max)

        sim = sim - sim.amax(dim = -1, keepdim = True).detach()
        attn = sim.softmax(dim = -1)
        attn = self.dropout(attn)

        return einsum('b i j, b j d -> b i d', attn, v)
