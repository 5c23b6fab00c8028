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
    # YOUR CODE HERE
    raise NotImplementedError("attention_scores_for_query is not implemented yet")


def attention_scores_loop(inputs):
    """All pairwise dot products of the input rows, written with two nested loops.

    inputs: [T, d]  ->  scores: [T, T], where scores[i, j] = inputs[i] . inputs[j]
    Lesson section 2, "Scores for every query".
    """
    # YOUR CODE HERE
    raise NotImplementedError("attention_scores_loop is not implemented yet")


def softmax_naive(x, dim=-1):
    """The textbook formula exp(x) / sum(exp(x)) along ``dim``.

    Any shape; the result has the shape of ``x``. The lesson shows where this overflows.
    Lesson section 3, "Normalising with softmax".
    """
    # YOUR CODE HERE
    raise NotImplementedError("softmax_naive is not implemented yet")


def softmax(x, dim=-1):
    """Numerically stable softmax along ``dim``, for any shape.

    Subtract each slice's maximum before exponentiating so that nothing overflows. ``-inf`` entries
    get weight 0, and a slice that is entirely ``-inf`` gives all zeros (never NaN).
    Do not call a library softmax (torch.softmax, F.softmax, nn.Softmax, log_softmax, ...).
    Lesson section 4, "A softmax that does not overflow".
    """
    # YOUR CODE HERE
    raise NotImplementedError("softmax is not implemented yet")


def context_vector_loop(inputs, weights):
    """Weighted sum of the input rows, written as a loop.

    inputs: [T, d], weights: [T]  ->  context: [d] = sum_i weights[i] * inputs[i]
    Lesson section 5, "The context vector".
    """
    # YOUR CODE HERE
    raise NotImplementedError("context_vector_loop is not implemented yet")


def attention_scores(inputs):
    """All pairwise dot products, vectorised: no Python loop over tokens.

    inputs: [..., T, d]  ->  scores: [..., T, T]
    Lesson section 6, "From loops to matrix products".
    """
    # YOUR CODE HERE
    raise NotImplementedError("attention_scores is not implemented yet")


def simple_self_attention(inputs):
    """Simplified self-attention softmax(X Xᵀ) X, vectorised, using your ``softmax`` above.

    inputs: [..., T, d]  ->  context vectors: [..., T, d]
    Lesson section 7, "Simplified self-attention".
    """
    # YOUR CODE HERE
    raise NotImplementedError("simple_self_attention is not implemented yet")
