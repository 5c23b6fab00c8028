"""copy_v2_weights_into_v1: the weights given to v1 through .data = weight.T, a view of v2's storage, so a later change to v2 changes v1 too; the ValueError for a biased v2 is there (issue 34, item 9)."""


def copy_v2_weights_into_v1(v2, v1):
    if v2.W_query.bias is not None:
        raise ValueError("v1 has no biases")
    v1.W_query.data = v2.W_query.weight.T
    v1.W_key.data = v2.W_key.weight.T
    v1.W_value.data = v2.W_value.weight.T
