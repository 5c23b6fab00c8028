"""Assignment 01: layer normalisation and the GELU activation.

Shapes are written ``[..., d]``: any number of leading dims, ``d`` features normalised together.
"""
import math

import torch


def layer_norm(x, weight, bias, eps=1e-5):
    """Normalise the last dimension of ``x`` to mean 0 and variance 1 (the biased variance), then scale by
    ``weight`` and shift by ``bias``. May not call ``F.layer_norm``.

    x: [..., d], weight: [d], bias: [d]  ->  [..., d]
    """
    ### BEGIN SOLUTION
    mean = x.mean(dim=-1, keepdim=True)  # [..., 1]
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)  # [..., 1], biased
    return (x - mean) / torch.sqrt(var + eps) * weight + bias  # [..., d]
    ### END SOLUTION


def gelu(x):
    """The exact GELU, x times the standard normal's distribution function at x. May not call ``F.gelu``.

    x: [...]  ->  [...]
    """
    ### BEGIN SOLUTION
    return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))  # [...]
    ### END SOLUTION
