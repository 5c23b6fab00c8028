"""Bug port: FluxML/NNlib.jl, src/softmax.jl (before https://github.com/FluxML/NNlib.jl/pull/43 "Fixed
softmax for large negative numbers"): the value subtracted before exponentiating was not the row
maximum but max(0, row maximum), so softmax([-10000, -10000.]) underflows to 0/0. Ported (Julia ->
torch) into softmax (01). Expected id: softmax-unstable.
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
    m = x.amax(dim=dim, keepdim=True).clamp(min=0)  # bug: max(0, maximum(x))
    m = torch.where(torch.isinf(m), torch.zeros_like(m), m).detach()
    e = torch.exp(x - m)
    s = e.sum(dim=dim, keepdim=True)
    return e / s


def context_vector_loop(inputs, weights):
    context = torch.zeros(inputs.shape[1], dtype=inputs.dtype, device=inputs.device)
    for i, x_i in enumerate(inputs):
        context = context + weights[i] * x_i
    return context


def attention_scores(inputs):
    return inputs @ inputs.transpose(-2, -1)


def simple_self_attention(inputs):
    return softmax(attention_scores(inputs), dim=-1) @ inputs
