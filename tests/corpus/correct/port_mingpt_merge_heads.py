"""merge_heads: port of karpathy/minGPT mingpt/model.py CausalSelfAttention.forward (y.transpose(1, 2).contiguous().view(B, T, C))"""


def merge_heads(x):
    B, nh, T, hs = x.size()
    return x.transpose(1, 2).contiguous().view(B, T, nh * hs)
