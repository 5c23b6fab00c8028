"""attention_scores_loop: Final correct version."""
import torch


def attention_scores_loop(inputs):
    """All pairwise dot products of the input rows, written with two nested loops.

    inputs: [T, d]  ->  scores: [T, T], where scores[i, j] = inputs[i] . inputs[j]
    Lesson section 2, "Scores for every query".
    """
    T = inputs.shape[0]
    scores = inputs.new_empty(T, T)
    for i in range(T):
        for j in range(T):
            scores[i, j] = torch.dot(inputs[i], inputs[j])
    return scores
