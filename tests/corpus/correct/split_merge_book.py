"""merge_heads: the book's contiguous().view (and split_heads with reshape and transpose)."""


def split_heads(x, num_heads):
    b, num_tokens, d = x.shape
    if d % num_heads != 0:
        raise ValueError("d must be divisible by num_heads")
    return x.reshape(b, num_tokens, num_heads, d // num_heads).transpose(1, 2)


def merge_heads(x):
    b, num_heads, num_tokens, head_dim = x.shape
    return x.transpose(1, 2).contiguous().view(b, num_tokens, num_heads * head_dim)
