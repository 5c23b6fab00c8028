"""merge_heads: reshaped [B, H, T, hd] straight to [B, T, H*hd] without transposing heads and tokens back first."""


def merge_heads(x):
    B, H, T, hd = x.shape
    return x.reshape(B, T, H * hd)
