"""merge_heads: called .view after transpose(1, 2), which fails because the transposed tensor is not contiguous."""


def merge_heads(x):
    B, H, T, hd = x.shape
    return x.transpose(1, 2).view(B, T, H * hd)
