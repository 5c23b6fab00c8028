"""merge_heads: transpose, then view."""


def merge_heads(x):
    b, h, t, d = x.shape
    return x.transpose(1, 2).view(b, t, h * d)
