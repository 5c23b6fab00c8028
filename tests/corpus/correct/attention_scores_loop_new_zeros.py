"""attention_scores_loop: sums of products in plain loops, into a matrix of the input's dtype."""


def attention_scores_loop(inputs):
    n = inputs.shape[0]
    result = inputs.new_zeros((n, n))
    for i in range(n):
        for j in range(n):
            result[i, j] = (inputs[i] * inputs[j]).sum()
    return result
