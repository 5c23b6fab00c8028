"""CachedMultiHeadAttention ported from pytorch-labs/gpt-fast model.py (Attention with n_local_heads == n_head,
KVCache.update, the tril mask indexed by input_pos).

Source: https://github.com/pytorch-labs/gpt-fast/blob/32971d3/model.py
Kept: KVCache buffers [B, H, max_seq_length, D] written at input_pos (k_out[:, :, input_pos] = k_val) and returned
whole; mask = causal_mask[None, None, input_pos] over the whole buffer (positions not yet written are hidden by
the causal mask); F.scaled_dot_product_attention(attn_mask=mask); transpose/contiguous/view; wo.
Adapted: the course's names and out_proj with a bias; the preallocated buffer is sized by context_length and
allocated at the first cached call (gpt-fast's setup_caches), in the keys' dtype and device; rotary removed.
"""
import torch
import torch.nn as nn
from torch import Tensor
from torch.nn import functional as F


class CachedMultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.n_head = num_heads
        self.head_dim = d_out // num_heads
        self.dim = d_out
        self.max_seq_length = context_length
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = dropout
        self.causal_mask = torch.tril(torch.ones(self.max_seq_length, self.max_seq_length, dtype=torch.bool))
        self.reset_cache()

    def reset_cache(self):
        self.cache_k = None
        self.cache_v = None
        self.input_pos_next = 0

    def update(self, input_pos, k_val, v_val):
        # input_pos: [S], k_val: [B, H, S, D]
        assert input_pos.shape[0] == k_val.shape[2]
        if self.cache_k is None:
            cache_shape = (k_val.shape[0], self.n_head, self.max_seq_length, self.head_dim)
            self.cache_k = torch.zeros(cache_shape, dtype=k_val.dtype, device=k_val.device)
            self.cache_v = torch.zeros(cache_shape, dtype=v_val.dtype, device=v_val.device)
        k_out = self.cache_k
        v_out = self.cache_v
        k_out[:, :, input_pos] = k_val
        v_out[:, :, input_pos] = v_val
        return k_out, v_out

    def forward(self, x: Tensor, use_cache=False) -> Tensor:
        bsz, seqlen, _ = x.shape
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        q = q.view(bsz, seqlen, self.n_head, self.head_dim)
        k = k.view(bsz, seqlen, self.n_head, self.head_dim)
        v = v.view(bsz, seqlen, self.n_head, self.head_dim)
        q, k, v = map(lambda x: x.transpose(1, 2), (q, k, v))

        if use_cache:
            input_pos = torch.arange(self.input_pos_next, self.input_pos_next + seqlen, device=x.device)
            self.input_pos_next += seqlen
            k, v = self.update(input_pos, k, v)
            mask = self.causal_mask.to(x.device)[None, None, input_pos]
        else:
            mask = self.causal_mask.to(x.device)[None, None, :seqlen, :seqlen]

        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                           dropout_p=self.dropout if self.training else 0.0)
        y = y.transpose(1, 2).contiguous().view(bsz, seqlen, self.dim)
        return self.out_proj(y)
