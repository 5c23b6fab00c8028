"""repeat_kv: port of huggingface/transformers models/llama/modeling_llama.py repeat_kv (x[:, :, None] expanded over n_rep, then reshaped)"""


def repeat_kv(x, group_size):
    batch, num_key_value_heads, slen, head_dim = x.shape
    if group_size == 1:
        return x
    x = x[:, :, None, :, :].expand(batch, num_key_value_heads, group_size, slen, head_dim)
    return x.reshape(batch, num_key_value_heads * group_size, slen, head_dim)
