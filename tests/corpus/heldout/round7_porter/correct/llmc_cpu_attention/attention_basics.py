"""Correct port: karpathy/llm.c, train_gpt2.c, attention_forward (CPU reference) and
dev/cuda/softmax_forward.cu softmax_forward_cpu:

    // pass 1: calculate query dot key and maxval
    float maxval = -10000.0f; for t2: val = 0; for i: val += query_t[i] * key_t2[i]; ...
    // pass 2: calculate the exp and keep track of sum
    float expsum = 0; for t2: expv = expf(preatt_bth[t2] - maxval); expsum += expv; att_bth[t2] = expv;
    float expsum_inv = expsum == 0.0f ? 0.0f : 1.0f / expsum;
    // pass 3: normalize; pass 4: accumulate weighted values into out_bth

Ported to the course's unscaled lesson: the dot-product loops go into attention_scores_for_query /
attention_scores_loop, pass 2/3 into softmax (vectorised over any dim, maxval = running -inf max and
expsum_inv = 0 when expsum == 0 as llm.c does), pass 4 into context_vector_loop.
Covers: attention_scores_for_query, attention_scores_loop, softmax, context_vector_loop (01).
"""
import torch


def attention_scores_for_query(inputs, query):
    T, C = inputs.shape
    preatt = torch.zeros(T, dtype=inputs.dtype, device=inputs.device)
    for t2 in range(T):
        key_t2 = inputs[t2]
        val = (query * key_t2).sum()
        preatt[t2] = val
    return preatt


def attention_scores_loop(inputs):
    T, C = inputs.shape
    preatt = torch.zeros(T, T, dtype=inputs.dtype, device=inputs.device)
    for t in range(T):
        query_t = inputs[t]
        for t2 in range(T):
            key_t2 = inputs[t2]
            preatt[t, t2] = (query_t * key_t2).sum()
    return preatt


def softmax_naive(x, dim=-1):
    return torch.exp(x) / torch.exp(x).sum(dim=dim, keepdim=True)


def softmax(x, dim=-1):
    maxval = x.amax(dim=dim, keepdim=True)
    maxval = torch.where(torch.isfinite(maxval), maxval, torch.zeros_like(maxval)).detach()
    expv = torch.exp(x - maxval)
    expsum = expv.sum(dim=dim, keepdim=True)
    expsum_inv = torch.where(expsum == 0, torch.zeros_like(expsum), 1.0 / torch.where(expsum == 0, torch.ones_like(expsum), expsum))
    return expv * expsum_inv


def context_vector_loop(inputs, weights):
    T, hs = inputs.shape
    out_bth = torch.zeros(hs, dtype=inputs.dtype, device=inputs.device)
    for t2 in range(T):
        value_t2 = inputs[t2]
        att_btht2 = weights[t2]
        out_bth = out_bth + att_btht2 * value_t2
    return out_bth


def attention_scores(inputs):
    return inputs @ inputs.transpose(-2, -1)


def simple_self_attention(inputs):
    return softmax(attention_scores(inputs), dim=-1) @ inputs
