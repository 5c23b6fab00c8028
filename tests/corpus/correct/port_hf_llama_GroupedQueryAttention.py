"""GroupedQueryAttention: port of huggingface/transformers models/llama/modeling_llama.py LlamaAttention and eager_attention_forward (cache grown along dim -2, cache_position causal mask of finfo.min added to the scores, repeat_kv, softmax promoted to float32; no rotary positions)"""
import torch
from torch import nn


def _repeat_kv(hidden_states, n_rep):
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_in, d_out, dropout, num_heads, num_kv_groups, dtype=None, qkv_bias=False):
        super().__init__()
        if d_out % num_heads != 0 or num_heads % num_kv_groups != 0:
            raise ValueError("d_out must be divisible by num_heads, num_heads by num_kv_groups")
        self.head_dim = d_out // num_heads
        self.num_heads = num_heads
        self.num_key_value_heads = num_kv_groups
        self.num_key_value_groups = num_heads // num_kv_groups
        self.scaling = self.head_dim ** -0.5
        self.attention_dropout = dropout
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias, dtype=dtype)
        self.W_key = nn.Linear(d_in, num_kv_groups * self.head_dim, bias=qkv_bias, dtype=dtype)
        self.W_value = nn.Linear(d_in, num_kv_groups * self.head_dim, bias=qkv_bias, dtype=dtype)
        self.out_proj = nn.Linear(d_out, d_out, bias=False, dtype=dtype)
        self.cache_k = None
        self.cache_v = None

    def reset_cache(self):
        self.cache_k, self.cache_v = None, None

    def forward(self, x, use_cache=False):
        input_shape = x.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.W_query(x).view(hidden_shape).transpose(1, 2)
        key_states = self.W_key(x).view(hidden_shape).transpose(1, 2)
        value_states = self.W_value(x).view(hidden_shape).transpose(1, 2)
        past_seen_tokens = 0
        if use_cache:
            if self.cache_k is not None:
                past_seen_tokens = self.cache_k.shape[-2]
                key_states = torch.cat([self.cache_k, key_states], dim=-2)
                value_states = torch.cat([self.cache_v, value_states], dim=-2)
            self.cache_k, self.cache_v = key_states, value_states
        cache_position = torch.arange(past_seen_tokens, past_seen_tokens + x.shape[1], device=x.device)
        kv_len = key_states.shape[-2]
        min_dtype = torch.finfo(query_states.dtype).min
        causal_mask = torch.zeros((x.shape[1], kv_len), dtype=query_states.dtype, device=x.device)
        causal_mask = causal_mask.masked_fill(
            torch.arange(kv_len, device=x.device)[None, :] > cache_position[:, None], min_dtype)
        key_states = _repeat_kv(key_states, self.num_key_value_groups)
        value_states = _repeat_kv(value_states, self.num_key_value_groups)
        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) * self.scaling
        attn_weights = attn_weights + causal_mask
        attn_weights = nn.functional.softmax(
            attn_weights, dim=-1, dtype=torch.promote_types(query_states.dtype, torch.float32)).to(query_states.dtype)
        attn_weights = nn.functional.dropout(attn_weights, p=self.attention_dropout, training=self.training)
        attn_output = torch.matmul(attn_weights, value_states).transpose(1, 2).contiguous()
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        return self.out_proj(attn_output)
