"""merge_heads: reshape straight back to [B, T, H*hd]."""


def merge_heads(x):
    batch, heads, tokens, head_dim = x.shape
    return x.contiguous().view(batch, tokens, heads * head_dim)
