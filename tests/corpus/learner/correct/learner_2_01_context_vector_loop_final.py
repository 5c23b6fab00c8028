"""context_vector_loop: Final correct version."""
import torch


def context_vector_loop(inputs, weights):
    """Weighted sum of the input rows, written as a loop.

    inputs: [T, d], weights: [T]  ->  context: [d] = sum_i weights[i] * inputs[i]
    Lesson section 5, "The context vector".
    """
    context = torch.zeros_like(inputs[0])
    for i in range(inputs.shape[0]):
        context = context + weights[i] * inputs[i]
    return context
