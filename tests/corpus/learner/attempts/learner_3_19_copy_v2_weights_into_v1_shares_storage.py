"""copy_v2_weights_into_v1: replaced v1's parameters with new Parameters built on v2's weight.T, so v1 and v2 share storage (a view), not copies."""
from torch import nn


def copy_v2_weights_into_v1(v2, v1):
    if v2.W_query.bias is not None:
        raise ValueError("v1 has no biases")
    v1.W_query = nn.Parameter(v2.W_query.weight.T)
    v1.W_key = nn.Parameter(v2.W_key.weight.T)
    v1.W_value = nn.Parameter(v2.W_value.weight.T)
