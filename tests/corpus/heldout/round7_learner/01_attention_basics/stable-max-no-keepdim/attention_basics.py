"""Assignment 01: attention basics (no trainable weights)."""
import torch


def attention_scores_for_query(inputs, query):
    T = inputs.shape[0]
    scores = inputs.new_empty(T)
    for i in range(T):
        scores[i] = torch.dot(inputs[i], query)
    return scores


def attention_scores_loop(inputs):
    T = inputs.shape[0]
    scores = inputs.new_empty(T, T)
    for i in range(T):
        for j in range(T):
            scores[i, j] = torch.dot(inputs[i], inputs[j])
    return scores


def softmax_naive(x, dim=-1):
    e = torch.exp(x)
    return e / e.sum(dim=dim, keepdim=True)


def softmax(x, dim=-1):
    m = x.amax(dim=dim)
    m = torch.where(torch.isinf(m), torch.zeros_like(m), m)
    e = torch.exp(x - m)
    s = e.sum(dim=dim, keepdim=True)
    s = torch.where(s == 0, torch.ones_like(s), s)
    return e / s


def context_vector_loop(inputs, weights):
    context = torch.zeros_like(inputs[0])
    for i in range(inputs.shape[0]):
        context = context + weights[i] * inputs[i]
    return context


def attention_scores(inputs):
    return inputs @ inputs.transpose(-2, -1)


def simple_self_attention(inputs):
    weights = softmax(attention_scores(inputs), dim=-1)
    return weights @ inputs
