"""split_heads: unflatten the features, then move the heads forward."""


def split_heads(x, num_heads):
    if x.shape[-1] % num_heads:
        raise ValueError("the feature size must be a multiple of num_heads")
    return x.unflatten(-1, (num_heads, -1)).permute(0, 2, 1, 3)
