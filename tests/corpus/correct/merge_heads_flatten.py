"""merge_heads: move the heads back behind the tokens, then flatten them into the features."""


def merge_heads(x):
    return x.permute(0, 2, 1, 3).flatten(start_dim=2)
