"""split_heads: reshaped [B, T, D] straight to [B, H, T, D/H] without the transpose, so heads get the wrong features/tokens mixed."""


def split_heads(x, num_heads):
    B, T, D = x.shape
    if D % num_heads != 0:
        raise ValueError("D must be divisible by num_heads")
    return x.reshape(B, num_heads, T, D // num_heads)
