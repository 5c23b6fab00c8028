"""GroupedQueryAttention ported from pytorch-labs/gpt-fast model.py (Attention, KVCache, Transformer.forward mask).

Source: https://github.com/pytorch-labs/gpt-fast/blob/32971d3/model.py
Kept: one fused wqkv split by [dim, kv_size, kv_size] (here three Linear layers, as the course names them),
view(bsz, seqlen, n_head, head_dim) + transpose(1, 2), KVCache.update writing k/v at input_pos along dim 2,
the boolean tril causal mask indexed by input_pos (mask = causal_mask[None, None, input_pos]),
repeat_interleave(n_head // n_local_heads, dim=1), F.scaled_dot_product_attention(q, k, v, attn_mask=mask).
Adapted: no rotary embedding (the course's GQA has none); the cache grows with the sequence instead of a
max_seq_length preallocation (the course's constructor has no length); dropout_p as in nanoGPT's flash path.
"""
import torch
import torch.nn as nn
from torch import Tensor
from torch.nn import functional as F


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_in, d_out, dropout, num_heads, num_kv_groups, dtype=None, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        assert num_heads % num_kv_groups == 0
        self.n_head = num_heads
        self.head_dim = d_out // num_heads
        self.n_local_heads = num_kv_groups
        self.dim = d_out
        kv_size = self.n_local_heads * self.head_dim
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias, dtype=dtype)
        self.W_key = nn.Linear(d_in, kv_size, bias=qkv_bias, dtype=dtype)
        self.W_value = nn.Linear(d_in, kv_size, bias=qkv_bias, dtype=dtype)
        self.out_proj = nn.Linear(d_out, d_out, bias=False, dtype=dtype)
        self.dropout = dropout
        self.reset_cache()

    def reset_cache(self):
        self.cache_k = None
        self.cache_v = None
        self.next_pos = 0

    def _update(self, input_pos: Tensor, k_val: Tensor, v_val: Tensor):
        # input_pos: [S], k_val: [B, H, S, D]
        assert input_pos.shape[0] == k_val.shape[2]
        end = int(input_pos[-1]) + 1
        if self.cache_k is None:
            self.cache_k = k_val.new_zeros(k_val.shape[0], k_val.shape[1], 0, k_val.shape[3])
            self.cache_v = v_val.new_zeros(v_val.shape[0], v_val.shape[1], 0, v_val.shape[3])
        grow = end - self.cache_k.shape[2]
        if grow > 0:
            pad = k_val.new_zeros(k_val.shape[0], k_val.shape[1], grow, k_val.shape[3])
            self.cache_k = torch.cat([self.cache_k, pad], dim=2)
            self.cache_v = torch.cat([self.cache_v, pad.to(v_val.dtype)], dim=2)
        k_out = self.cache_k
        v_out = self.cache_v
        k_out[:, :, input_pos] = k_val
        v_out[:, :, input_pos] = v_val
        return k_out, v_out

    def forward(self, x: Tensor, use_cache=False) -> Tensor:
        bsz, seqlen, _ = x.shape
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)

        q = q.view(bsz, seqlen, self.n_head, self.head_dim)
        k = k.view(bsz, seqlen, self.n_local_heads, self.head_dim)
        v = v.view(bsz, seqlen, self.n_local_heads, self.head_dim)

        q, k, v = map(lambda x: x.transpose(1, 2), (q, k, v))

        start = self.next_pos if use_cache else 0
        input_pos = torch.arange(start, start + seqlen, device=x.device)
        if use_cache:
            k, v = self._update(input_pos, k, v)
            self.next_pos = start + seqlen
        causal_mask = torch.tril(torch.ones(start + seqlen, start + seqlen, dtype=torch.bool, device=x.device))
        mask = causal_mask[None, None, input_pos]

        k = k.repeat_interleave(self.n_head // self.n_local_heads, dim=1)
        v = v.repeat_interleave(self.n_head // self.n_local_heads, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                           dropout_p=self.dropout if self.training else 0.0)

        y = y.transpose(1, 2).contiguous().view(bsz, seqlen, self.dim)

        y = self.out_proj(y)
        return y
