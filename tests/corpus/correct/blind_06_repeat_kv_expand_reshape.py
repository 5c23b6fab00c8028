"""repeat_kv: Hugging Face Llama style, expand a new axis after the group axis then reshape (returns x itself for group_size 1)."""
import torch


def repeat_kv(x, group_size):
    batch, num_key_value_heads, slen, head_dim = x.shape
    if group_size == 1:
        return x
    x = x[:, :, None, :, :].expand(batch, num_key_value_heads, group_size, slen, head_dim)
    return x.reshape(batch, num_key_value_heads * group_size, slen, head_dim)
