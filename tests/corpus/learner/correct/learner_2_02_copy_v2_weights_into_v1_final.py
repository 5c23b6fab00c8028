"""copy_v2_weights_into_v1: Final correct version."""
import math
import torch
from torch import nn


def copy_v2_weights_into_v1(v2, v1):
    """Load a SelfAttention_v2's weights into a SelfAttention_v1 so both give the same output.

    ``nn.Linear`` stores its weight as [d_out, d_in] and computes x @ weightᵀ; v1 computes x @ W
    with W: [d_in, d_out]. Modify ``v1`` in place and return None. A v2 with biases cannot be copied
    (v1 has none): raise ValueError.
    Lesson section 4, "Using nn.Linear".
    """
    if v2.W_query.bias is not None:
        raise ValueError("v1 has no biases: cannot copy a v2 built with qkv_bias=True")
    with torch.no_grad():
        v1.W_query.copy_(v2.W_query.weight.T)
        v1.W_key.copy_(v2.W_key.weight.T)
        v1.W_value.copy_(v2.W_value.weight.T)
