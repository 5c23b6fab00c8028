"""merge_heads: values of shape (batch, heads, seq_len, head_dim) reshaped to (batch, seq_len, hidden) without the
permute(0, 2, 1, 3) first (heads-merged-without-transpose).

Source: https://github.com/jsbaan/transformer-from-scratch/blob/main/multi_head_attention.py (before PR #6, line 73)
Bug report / fix: https://github.com/jsbaan/transformer-from-scratch/issues/4, https://github.com/jsbaan/transformer-from-scratch/pull/6
"""


def merge_heads(x):
    batch_size, num_heads, sequence_length, qkv_dim = x.shape
    # Concatenate heads: (batch_size, sequence_length, hidden_dim)
    values = x.reshape(batch_size, sequence_length, num_heads * qkv_dim)
    return values
