"""repeat_kv: port of Dao-AILab/flash-attention tests/test_flash_attn.py attention_ref's repeat 'b s h d -> b s (h g) d' (unsqueeze, expand, reshape: each kv head repeated in a row)"""


def repeat_kv(x, group_size):
    # einops repeat "b h s d -> b (h g) s d": h outer, g inner
    b, h, s, d = x.shape
    return x.unsqueeze(2).expand(b, h, group_size, s, d).reshape(b, h * group_size, s, d)
