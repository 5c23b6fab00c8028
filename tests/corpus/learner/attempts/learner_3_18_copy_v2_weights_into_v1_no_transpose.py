"""copy_v2_weights_into_v1: copied nn.Linear's weight without transposing it (weight is [d_out, d_in], v1 wants [d_in, d_out])."""
import torch


def copy_v2_weights_into_v1(v2, v1):
    if v2.W_query.bias is not None:
        raise ValueError("v1 has no biases")
    with torch.no_grad():
        v1.W_query.copy_(v2.W_query.weight)
        v1.W_key.copy_(v2.W_key.weight)
        v1.W_value.copy_(v2.W_value.weight)
