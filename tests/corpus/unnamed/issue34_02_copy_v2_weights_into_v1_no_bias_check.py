"""copy_v2_weights_into_v1: the weights copied right, but a v2 with biases is copied too (its biases dropped) instead of raising ValueError (issue 34, item 9)."""
import torch


def copy_v2_weights_into_v1(v2, v1):
    with torch.no_grad():
        v1.W_query.copy_(v2.W_query.weight.T)
        v1.W_key.copy_(v2.W_key.weight.T)
        v1.W_value.copy_(v2.W_value.weight.T)
