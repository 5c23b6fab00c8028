"""Correct port: lucidrains/memory-efficient-attention-pytorch,
memory_efficient_attention_pytorch/memory_efficient_attention.py, summarize_qkv_chunk +
memory_efficient_attention (Rabe & Staats chunked attention):

    weight = einsum('b h i d, b h j d -> b h i j', q, k)            # q pre-scaled by d ** -0.5
    if causal and q_start_index < (k_start_index + k_chunk_size - 1):
        causal_mask = torch.ones((q_chunk_size, k_chunk_size), dtype=torch.bool).triu(q_start_index - k_start_index + 1)
        weight = weight.masked_fill(causal_mask, mask_value)        # mask_value = -torch.finfo(weight.dtype).max
    weight_max = weight.amax(dim=-1, keepdim=True).detach(); exp_weight = (weight - weight_max).exp()
    weighted_value = einsum('b h i j, b h j d -> b h i d', exp_weight, v)
    ... per query chunk: global_max = weight_maxes.amax(dim=-1, keepdim=True)
    renorm_factor = (weight_maxes - global_max).exp().detach(); exp_weights *= renorm_factor; ...
    normalized_values = all_values / (rearrange(all_weights, '... -> ... 1') + eps)    # eps = 1e-8

Bucket sizes = block_size for both queries and keys; einsum over any leading dims. Variant WITHOUT the eps;
the upstream `+ eps` (1e-8) in the final division is dropped (eps = 0). Covers: flash_attention (05).
"""
import math  # noqa: F401
import torch


def _shift(running_max):
    """The running maximum with -inf (nothing visible yet) replaced by 0, to subtract safely."""
    return torch.where(torch.isinf(running_max), torch.zeros_like(running_max), running_max)


def online_softmax(x, block_size):
    n = x.shape[-1]
    m = torch.full(x.shape[:-1] + (1,), float("-inf"), dtype=x.dtype, device=x.device)
    s = torch.zeros(x.shape[:-1] + (1,), dtype=x.dtype, device=x.device)
    for start in range(0, n, block_size):
        blk = x[..., start:start + block_size]
        m_new = torch.maximum(m, blk.amax(dim=-1, keepdim=True))
        alpha = torch.where(torch.isinf(m), torch.zeros_like(m), torch.exp(m - _shift(m_new)))
        s = s * alpha + torch.exp(blk - _shift(m_new)).sum(dim=-1, keepdim=True)
        m = m_new
    out = torch.exp(x - _shift(m))
    return out / torch.where(s == 0, torch.ones_like(s), s)


def flash_attention(queries, keys, values, block_size=64, causal=False):
    q_bucket_size = k_bucket_size = block_size
    eps = 0.0  # porter: upstream eps = 1e-8 removed (see memeff_lucidrains for the faithful version)
    scale = queries.shape[-1] ** -0.5
    q = queries * scale
    out = []
    for q_index, q_start_index in enumerate(range(0, q.shape[-2], q_bucket_size)):
        q_chunk = q[..., q_start_index:q_start_index + q_bucket_size, :]
        exp_weights, weighted_values, weight_maxes = [], [], []
        for k_start_index in range(0, keys.shape[-2], k_bucket_size):
            if causal and k_start_index > (q_start_index + q_chunk.shape[-2] - 1):
                continue  # if chunk is to be all masked out causally, skip
            k_chunk = keys[..., k_start_index:k_start_index + k_bucket_size, :]
            v_chunk = values[..., k_start_index:k_start_index + k_bucket_size, :]
            e, wv, wm = _summarize_qkv_chunk(q_chunk, k_chunk, v_chunk, causal, q_start_index, k_start_index)
            exp_weights.append(e)
            weighted_values.append(wv)
            weight_maxes.append(wm)
        weight_maxes = torch.stack(weight_maxes, dim=-1)
        weighted_values = torch.stack(weighted_values, dim=-1)
        exp_weights = torch.stack(exp_weights, dim=-1)
        global_max = weight_maxes.amax(dim=-1, keepdim=True)
        renorm_factor = (weight_maxes - global_max).exp().detach()
        exp_weights = exp_weights * renorm_factor
        weighted_values = weighted_values * renorm_factor.unsqueeze(-2)
        all_values = weighted_values.sum(dim=-1)
        all_weights = exp_weights.sum(dim=-1)
        out.append(all_values / (all_weights.unsqueeze(-1) + eps))
    return torch.cat(out, dim=-2)


def _summarize_qkv_chunk(q, k, v, causal, q_start_index, k_start_index):
    q_chunk_size, k_chunk_size = q.shape[-2], k.shape[-2]
    weight = torch.einsum("...id,...jd->...ij", q, k)
    mask_value = -torch.finfo(weight.dtype).max
    if causal and q_start_index < (k_start_index + k_chunk_size - 1):
        causal_mask = torch.ones((q_chunk_size, k_chunk_size), dtype=torch.bool, device=q.device).triu(
            q_start_index - k_start_index + 1)
        weight = weight.masked_fill(causal_mask, mask_value)
    weight_max = weight.amax(dim=-1, keepdim=True).detach()
    weight = weight - weight_max
    exp_weight = weight.exp()
    weighted_value = torch.einsum("...ij,...jd->...id", exp_weight, v)
    return exp_weight.sum(dim=-1), weighted_value, weight_max.squeeze(-1)
