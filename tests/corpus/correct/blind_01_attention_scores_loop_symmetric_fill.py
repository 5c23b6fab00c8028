"""attention_scores_loop: Uses the symmetry of X X^T: computes the lower triangle with @ in nested loops and mirrors each value (written blind, from the contract alone)."""
import torch


def attention_scores_loop(inputs):
    n = inputs.shape[0]
    scores = torch.zeros((n, n), dtype=inputs.dtype, device=inputs.device)
    for i in range(n):
        for j in range(i + 1):
            s = inputs[i] @ inputs[j]
            scores[i, j] = s
            if i != j:
                scores[j, i] = s
    return scores
