"""merge_heads: a view straight after moving the heads back, valid only when each head's block is laid out after the batch's."""


def merge_heads(x):
    batch, heads, tokens, head_dim = x.shape
    if x.is_contiguous():
        return x.transpose(1, 2).reshape(batch, tokens, heads * head_dim)
    return x.transpose(1, 2).view(batch, tokens, heads * head_dim)
