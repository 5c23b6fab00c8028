"""scaled_dot_product_attention: PyTorch's fused kernel, with the mask flipped to its convention."""
import torch.nn.functional as F


def scaled_dot_product_attention(queries, keys, values, mask=None):
    return F.scaled_dot_product_attention(queries, keys, values, attn_mask=None if mask is None else ~mask)
