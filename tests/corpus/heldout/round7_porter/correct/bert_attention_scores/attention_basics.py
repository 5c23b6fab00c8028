"""Correct port: google-research/bert, modeling.py, attention_layer (TF -> torch):

    # `attention_scores` = [B, N, F, T]
    attention_scores = tf.matmul(query_layer, key_layer, transpose_b=True)
    attention_probs = tf.nn.softmax(attention_scores)
    context_layer = tf.matmul(attention_probs, value_layer)

With queries = keys = values = the inputs and without BERT's 1/sqrt(size_per_head) (the course's 01 is
unscaled), this is attention_scores and simple_self_attention; tf.nn.softmax is replaced by the
module's own stable softmax (01 forbids library softmax). Covers: attention_scores,
simple_self_attention (01).
"""
import torch


def attention_scores_for_query(inputs, query):
    scores = torch.empty(inputs.shape[0], dtype=inputs.dtype, device=inputs.device)
    for i, x_i in enumerate(inputs):
        scores[i] = torch.dot(x_i, query)
    return scores


def attention_scores_loop(inputs):
    n = inputs.shape[0]
    scores = torch.empty(n, n, dtype=inputs.dtype, device=inputs.device)
    for i in range(n):
        for j in range(n):
            scores[i, j] = torch.dot(inputs[i], inputs[j])
    return scores


def softmax_naive(x, dim=-1):
    return torch.exp(x) / torch.exp(x).sum(dim=dim, keepdim=True)


def softmax(x, dim=-1):
    m = x.amax(dim=dim, keepdim=True)
    m = torch.where(torch.isinf(m), torch.zeros_like(m), m).detach()
    e = torch.exp(x - m)
    s = e.sum(dim=dim, keepdim=True)
    return e / torch.where(s == 0, torch.ones_like(s), s)


def context_vector_loop(inputs, weights):
    context = torch.zeros(inputs.shape[1], dtype=inputs.dtype, device=inputs.device)
    for i, x_i in enumerate(inputs):
        context = context + weights[i] * x_i
    return context


def attention_scores(inputs):
    query_layer = key_layer = inputs
    return torch.matmul(query_layer, key_layer.transpose(-1, -2))  # tf.matmul(..., transpose_b=True)


def simple_self_attention(inputs):
    attention_scores_ = attention_scores(inputs)
    attention_probs = softmax(attention_scores_, dim=-1)
    value_layer = inputs
    return torch.matmul(attention_probs, value_layer)
