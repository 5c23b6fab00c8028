"""split_heads: a single view into the head layout."""


def split_heads(x, num_heads):
    B, T, D = x.shape
    if D % num_heads != 0:
        raise ValueError("D must be divisible by num_heads")
    return x.reshape(B, num_heads, T, D // num_heads)
