"""scaled_dot_product_attention: the weights applied to the keys."""


def scaled_dot_product_attention(queries, keys, values, mask=None):
    return attention_weights(queries, keys, mask) @ keys
