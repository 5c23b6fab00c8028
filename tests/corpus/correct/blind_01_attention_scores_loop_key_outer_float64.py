"""attention_scores_loop: Loops keys outer, queries inner, accumulating torch.inner in float64 and casting back to the input dtype (written blind, from the contract alone)."""
import torch


def attention_scores_loop(inputs):
    x = inputs.double()
    T = x.size(0)
    scores = torch.empty(T, T, dtype=torch.float64, device=inputs.device)
    for j in range(T):          # keys outside
        for i in range(T):      # queries inside
            scores[i, j] = torch.inner(x[i], x[j])
    return scores.to(dtype=inputs.dtype)
