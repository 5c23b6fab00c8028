"""copy_v2_weights_into_v1: assigns the transposed weights through .data, refusing biases."""


def copy_v2_weights_into_v1(v2, v1):
    if any(layer.bias is not None for layer in (v2.W_query, v2.W_key, v2.W_value)):
        raise ValueError("SelfAttention_v1 has no biases")
    v1.W_query.data = v2.W_query.weight.data.t().clone()
    v1.W_key.data = v2.W_key.weight.data.t().clone()
    v1.W_value.data = v2.W_value.weight.data.t().clone()
