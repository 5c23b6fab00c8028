"""Assignment 01: attention basics (no trainable weights).

Lesson: the notebook ``attention_basics.ipynb`` beside this file. We compute how much each token
"attends" to every other token of "Your journey starts with one step", first with explicit loops,
then vectorised. Attention here is unscaled; the 1/sqrt(d_k) scale arrives in assignment 02.

Shapes are written ``[..., T, d]``: ``T`` tokens of ``d`` features, after any number of batch dims.
"""
import torch


def attention_scores_for_query(inputs, query):
    """Attention scores of one query against every input row, written as a loop over rows.

    inputs: [T, d], query: [d]  ->  scores: [T], where scores[i] = inputs[i] . query
    Lesson section 1, "Scores for one query".
    """
    ### BEGIN SOLUTION
    scores = inputs.new_empty(inputs.shape[0])  # [T]
    for i, x_i in enumerate(inputs):  # x_i: [d]
        scores[i] = torch.dot(x_i, query)
    return scores
    ### END SOLUTION


def attention_scores_loop(inputs):
    """All pairwise dot products of the input rows, written with two nested loops.

    inputs: [T, d]  ->  scores: [T, T], where scores[i, j] = inputs[i] . inputs[j]
    Lesson section 2, "Scores for every query".
    """
    ### BEGIN SOLUTION
    num_tokens = inputs.shape[0]
    scores = inputs.new_empty(num_tokens, num_tokens)  # [T, T]
    for i, x_i in enumerate(inputs):
        for j, x_j in enumerate(inputs):
            scores[i, j] = torch.dot(x_i, x_j)
    return scores
    ### END SOLUTION


def softmax_naive(x, dim=-1):
    """The textbook formula exp(x) / sum(exp(x)) along ``dim``.

    Any shape; the result has the shape of ``x``. The lesson shows where this overflows.
    Lesson section 3, "Normalising with softmax".
    """
    ### BEGIN SOLUTION
    exp = torch.exp(x)
    return exp / exp.sum(dim=dim, keepdim=True)
    ### END SOLUTION


def softmax(x, dim=-1):
    """Numerically stable softmax along ``dim``, for any shape.

    Subtract each slice's maximum before exponentiating so that nothing overflows. ``-inf`` entries
    get weight 0, and a slice that is entirely ``-inf`` gives all zeros (never NaN).
    Do not call a library softmax (torch.softmax, F.softmax, nn.Softmax, log_softmax, ...).
    Lesson section 4, "A softmax that does not overflow".
    """
    ### BEGIN SOLUTION
    x_max = x.amax(dim=dim, keepdim=True)  # [..., 1, ...]
    x_max = torch.where(torch.isinf(x_max), torch.zeros_like(x_max), x_max)  # all -inf: shift by 0
    exp = torch.exp(x - x_max)  # every entry <= 1
    total = exp.sum(dim=dim, keepdim=True)  # >= 1, or 0 for an all -inf slice
    return exp / total.clamp_min(1.0)
    ### END SOLUTION


def context_vector_loop(inputs, weights):
    """Weighted sum of the input rows, written as a loop.

    inputs: [T, d], weights: [T]  ->  context: [d] = sum_i weights[i] * inputs[i]
    Lesson section 5, "The context vector".
    """
    ### BEGIN SOLUTION
    context = torch.zeros_like(inputs[0])  # [d]
    for w_i, x_i in zip(weights, inputs):
        context = context + w_i * x_i
    return context
    ### END SOLUTION


def attention_scores(inputs):
    """All pairwise dot products, vectorised: no Python loop over tokens.

    inputs: [..., T, d]  ->  scores: [..., T, T]
    Lesson section 6, "From loops to matrix products".
    """
    ### BEGIN SOLUTION
    return inputs @ inputs.transpose(-2, -1)  # [..., T, T]
    ### END SOLUTION


def simple_self_attention(inputs):
    """Simplified self-attention softmax(X Xᵀ) X, vectorised, using your ``softmax`` above.

    inputs: [..., T, d]  ->  context vectors: [..., T, d]
    Lesson section 7, "Simplified self-attention".
    """
    ### BEGIN SOLUTION
    weights = softmax(attention_scores(inputs), dim=-1)  # [..., T, T], rows sum to 1
    return weights @ inputs  # [..., T, d]
    ### END SOLUTION
