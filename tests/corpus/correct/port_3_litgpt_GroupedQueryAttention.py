"""GroupedQueryAttention ported from Lightning-AI/litgpt litgpt/model.py CausalSelfAttention (+ KVCache,
build_mask_cache, batched_index_copy_ as index_copy_).

Source: https://github.com/Lightning-AI/litgpt/blob/26857050fe3ff627cd714fe92f5838f51a3d5efa/litgpt/model.py#L390
Kept: q/k/v viewed (B, T, nh|n_query_groups, hs) and transposed; KV cache written at input_pos along dim -2 and
returned up to input_pos_maxp1; k/v repeat_interleave(q_per_kv, dim=1) when n_query_groups != n_head;
F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=0.0, scale=1/sqrt(head_size),
is_causal=mask is None) with mask = build_mask_cache (tril of ones) indexed by input_pos; y.transpose(1, 2) and
reshape(B, T, head_size * n_head); proj.
Adapted: three Linear layers instead of one fused qkv (course names), no rotary (the course's GQA has none),
the cache grows to the positions written instead of a max_seq_length buffer; dropout_p in training as the course
asks (litgpt passes 0.0).
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_in, d_out, dropout, num_heads, num_kv_groups, dtype=None, qkv_bias=False):
        super().__init__()
        if d_out % num_heads != 0 or num_heads % num_kv_groups != 0:
            raise ValueError("d_out % num_heads and num_heads % num_kv_groups must be 0")
        self.head_size = d_out // num_heads
        self.n_head = num_heads
        self.n_query_groups = num_kv_groups
        self.W_query = nn.Linear(d_in, num_heads * self.head_size, bias=qkv_bias, dtype=dtype)
        self.W_key = nn.Linear(d_in, num_kv_groups * self.head_size, bias=qkv_bias, dtype=dtype)
        self.W_value = nn.Linear(d_in, num_kv_groups * self.head_size, bias=qkv_bias, dtype=dtype)
        self.out_proj = nn.Linear(self.head_size * num_heads, d_out, bias=False, dtype=dtype)
        self.dropout = dropout
        self.reset_cache()

    def reset_cache(self):
        self.cache_k = None
        self.cache_v = None
        self.next_pos = 0

    def _kv_cache(self, input_pos, k, v):
        maxp1 = int(input_pos.max()) + 1
        if self.cache_k is None:
            self.cache_k = k.new_zeros(k.shape[0], k.shape[1], 0, k.shape[3])
            self.cache_v = v.new_zeros(v.shape[0], v.shape[1], 0, v.shape[3])
        if self.cache_k.shape[-2] < maxp1:
            grow = maxp1 - self.cache_k.shape[-2]
            self.cache_k = torch.cat([self.cache_k, k.new_zeros(k.shape[0], k.shape[1], grow, k.shape[3])], dim=-2)
            self.cache_v = torch.cat([self.cache_v, v.new_zeros(v.shape[0], v.shape[1], grow, v.shape[3])], dim=-2)
        self.cache_k = self.cache_k.index_copy_(-2, input_pos, k)
        self.cache_v = self.cache_v.index_copy_(-2, input_pos, v)
        return self.cache_k[..., :maxp1, :], self.cache_v[..., :maxp1, :]

    def forward(self, x, use_cache=False):
        B, T, C = x.size()
        head_size, n_head, n_query_groups = self.head_size, self.n_head, self.n_query_groups

        q = self.W_query(x).view(B, T, n_head, head_size)  # (B, T, nh_q, hs)
        k = self.W_key(x).view(B, T, n_query_groups, head_size)  # (B, T, n_query_groups, hs)
        v = self.W_value(x).view(B, T, n_query_groups, head_size)  # (B, T, n_query_groups, hs)

        q = q.transpose(1, 2)  # (B, nh_q, T, hs)
        k = k.transpose(1, 2)  # (B, nh_k, T, hs)
        v = v.transpose(1, 2)  # (B, nh_v, T, hs)

        mask = None
        if use_cache:
            input_pos = torch.arange(self.next_pos, self.next_pos + T, device=x.device)
            self.next_pos += T
            k, v = self._kv_cache(input_pos, k, v)
            ones = torch.ones((self.next_pos, self.next_pos), device=x.device, dtype=torch.bool)
            mask_cache = torch.tril(ones).unsqueeze(0).unsqueeze(0)
            mask = mask_cache.index_select(2, input_pos)

        if n_query_groups != n_head:
            q_per_kv = n_head // n_query_groups
            k = k.repeat_interleave(q_per_kv, dim=1)  # (B, nh_q, T, hs)
            v = v.repeat_interleave(q_per_kv, dim=1)  # (B, nh_q, T, hs)

        scale = 1.0 / math.sqrt(head_size)
        y = F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, dropout_p=self.dropout if self.training else 0.0, scale=scale, is_causal=mask is None
        )
        y = y.transpose(1, 2)

        # Re-assemble all head outputs side by side.
        y = y.reshape(B, T, head_size * n_head)

        # Output projection.
        return self.out_proj(y)  # (B, T, C)
