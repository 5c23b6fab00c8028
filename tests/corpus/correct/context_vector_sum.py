"""context_vector_loop: Python's sum over a generator of weighted rows."""


def context_vector_loop(inputs, weights):
    return sum(w * x for w, x in zip(weights, inputs))
