"""repeat_kv: tiles the groups with repeat, [K1, K2, K1, K2], where repeat_interleave is meant."""


def repeat_kv(x, group_size):
    return x.repeat(1, group_size, 1, 1)
