"""copy_v2_weights_into_v1: v1's parameters replaced with new nn.Parameters that share v2's storage (weight.T is a view), and no ValueError for a v2 with biases (issue 34, item 9)."""
import torch.nn as nn


def copy_v2_weights_into_v1(v2, v1):
    v1.W_query = nn.Parameter(v2.W_query.weight.T)
    v1.W_key = nn.Parameter(v2.W_key.weight.T)
    v1.W_value = nn.Parameter(v2.W_value.weight.T)
