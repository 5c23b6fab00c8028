"""The lesson's formulas for the helper exercises, put in place of a student's faulty helper to verify
that the exercise using it is right given a right one (grader/grading/stand_ins.py). Each runs in the
student's process on its own, with only ``torch``, ``math`` and ``F`` at hand, and follows the contract
(names, signatures, mask conventions): True in a mask means hidden.
"""
import math

import torch

from grader.authoring import stand_in


@stand_in
def softmax(x, dim=-1):
    top = x.amax(dim=dim, keepdim=True)
    e = torch.exp(x - torch.where(torch.isinf(top), torch.zeros_like(top), top))  # an all -inf slice: shift 0
    return e / e.sum(dim=dim, keepdim=True).clamp_min(1.0)  # the sum is >= 1, or 0 for an all -inf slice


@stand_in
def attention_scores(inputs):
    return inputs @ inputs.transpose(-2, -1)  # [..., T, T]


@stand_in
def attention_weights(queries, keys, mask=None):
    scores = queries @ keys.transpose(-2, -1) / math.sqrt(keys.shape[-1])  # [..., Tq, Tk]
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    top = scores.amax(dim=-1, keepdim=True)
    e = torch.exp(scores - torch.where(torch.isinf(top), torch.zeros_like(top), top))
    return e / e.sum(dim=-1, keepdim=True).clamp_min(1.0)  # a row with every key hidden: zeros


@stand_in
def scaled_dot_product_attention(queries, keys, values, mask=None):
    scores = queries @ keys.transpose(-2, -1) / math.sqrt(keys.shape[-1])  # [..., Tq, Tk]
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    top = scores.amax(dim=-1, keepdim=True)
    e = torch.exp(scores - torch.where(torch.isinf(top), torch.zeros_like(top), top))
    return (e / e.sum(dim=-1, keepdim=True).clamp_min(1.0)) @ values  # [..., Tq, dv]


@stand_in
def causal_mask(num_tokens, device=None):
    return torch.ones(num_tokens, num_tokens, dtype=torch.bool, device=device).triu(1)  # [T, T]: j > i hidden


@stand_in
def padding_mask(lengths, max_len):
    return torch.arange(max_len, device=lengths.device) >= lengths[:, None]  # [B, max_len]


@stand_in
def split_heads(x, num_heads):
    batch, tokens, dim = x.shape
    if dim % num_heads:
        raise ValueError(f"{dim} features do not split into {num_heads} heads")
    return x.reshape(batch, tokens, num_heads, dim // num_heads).transpose(1, 2)  # [B, H, T, hd]


@stand_in
def merge_heads(x):
    batch, heads, tokens, head_dim = x.shape
    return x.transpose(1, 2).reshape(batch, tokens, heads * head_dim)  # [B, T, H*hd]


@stand_in
def split_qkv(qkv, num_heads):
    batch, tokens, three_dim = qkv.shape
    if three_dim % (3 * num_heads):
        raise ValueError(f"{three_dim} features do not split into 3 x {num_heads} heads")
    q, k, v = qkv.reshape(batch, tokens, 3, num_heads, three_dim // (3 * num_heads)).permute(2, 0, 3, 1, 4)
    return q, k, v  # each [B, H, T, hd]


@stand_in
def repeat_kv(x, group_size):
    return x.repeat_interleave(group_size, dim=1)  # [B, G*group_size, T, hd]


@stand_in
def sliding_window_mask(num_queries, num_keys, window, q_start=0, k_start=0, device=None):
    queries = torch.arange(q_start, q_start + num_queries, device=device)[:, None]  # [Tq, 1]
    keys = torch.arange(k_start, k_start + num_keys, device=device)[None, :]  # [1, Tk]
    hidden = keys > queries
    return hidden if window is None else hidden | (queries - keys >= window)  # [Tq, Tk]


@stand_in
class SelfAttention_v1(torch.nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = torch.nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = torch.nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = torch.nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        q, k, v = x @ self.W_query, x @ self.W_key, x @ self.W_value  # [T, d_out] each
        return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(k.shape[-1]), dim=-1) @ v


@stand_in
class SelfAttention_v2(torch.nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = torch.nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = torch.nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = torch.nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)  # [T, d_out] each
        return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(k.shape[-1]), dim=-1) @ v
