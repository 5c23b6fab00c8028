"""renormalize_causal_weights: -inf written into the weights after the softmax, then each row divided by its sum (round 7 porter, blind: numbers only before).

Bug port: gabrielmittag/NISQA, nisqa/NISQA_lib.py Alignment (https://github.com/gabrielmittag/NISQA/issues/17
"Bug in Alignment": att[~mask] = float('-Inf') is applied to weights that already went through the
softmax: "The padded elements of att should be set to 0 instead of float(-Inf)"; NaNs result).
Ported into renormalize_causal_weights (03): the future of the normalised weights is set to -inf
instead of 0 before the rows are rescaled.
"""
import torch

from torch import nn

def renormalize_causal_weights(weights):
    T = weights.shape[-1]
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool, device=weights.device), diagonal=1)
    att = weights.masked_fill(mask, float("-Inf"))  # bug: -inf after the softmax
    return att / att.sum(dim=-1, keepdim=True)
