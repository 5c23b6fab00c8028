"""attention_weights: the BERT mask's polarity flipped, with its additive -10000 (round 7 porter, blind).

Bug port: nyu-mll/jiant, BERT attention mask sign (https://github.com/nyu-mll/jiant/pull/465
"Critical bug: fix sign of BERT attention mask" - "You want ones for the nonzero tokens"): the mask
handed to BERT's additive mask had the opposite polarity, so real tokens were masked and padding
attended. Ported into attention_weights (02): the course mask (True = hidden) is passed where BERT
expects 1 = attend. Expected id: mask-inverted (plus BERT's finite -10000).
"""

import math

import torch

from torch import nn

def attention_weights(queries, keys, mask=None):
    attention_scores = torch.matmul(queries, keys.transpose(-1, -2)) / math.sqrt(keys.shape[-1])
    if mask is not None:
        attention_mask = mask.to(attention_scores.dtype)  # bug: wrong polarity
        attention_scores = attention_scores + (1.0 - attention_mask) * -10000.0
    return torch.softmax(attention_scores, dim=-1)
