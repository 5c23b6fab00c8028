"""split_heads: port of karpathy/minGPT mingpt/model.py CausalSelfAttention.forward (k.view(B, T, nh, C // nh).transpose(1, 2); the n_embd % n_head assert as a ValueError)"""


def split_heads(x, num_heads):
    B, T, C = x.size()
    if C % num_heads != 0:  # minGPT: assert config.n_embd % config.n_head == 0
        raise ValueError("D must be divisible by num_heads")
    return x.view(B, T, num_heads, C // num_heads).transpose(1, 2)
