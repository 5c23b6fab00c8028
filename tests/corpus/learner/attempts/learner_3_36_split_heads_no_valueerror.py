"""split_heads: did not check that D is divisible by num_heads, so an indivisible D raises reshape's RuntimeError instead of ValueError."""


def split_heads(x, num_heads):
    B, T, D = x.shape
    return x.reshape(B, T, num_heads, D // num_heads).transpose(1, 2)
