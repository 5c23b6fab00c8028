"""scaled_dot_product_attention: forgot to pass the mask on to attention_weights, so masked keys are still attended."""


def scaled_dot_product_attention(queries, keys, values, mask=None):
    weights = attention_weights(queries, keys)
    return weights @ values
