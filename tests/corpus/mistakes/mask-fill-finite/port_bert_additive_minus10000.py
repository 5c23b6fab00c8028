"""attention_weights: BERT's additive mask, (1 - m) * -10000 added to the scores (round 7 porter, blind).

Bug port: google-research/bert, modeling.py, attention_layer (TF -> torch):

    adder = (1.0 - tf.cast(attention_mask, tf.float32)) * -10000.0
    attention_scores += adder
    attention_probs = tf.nn.softmax(attention_scores)

A finite -10000 instead of -inf: hidden positions keep a tiny weight when scores are large, and a row
whose keys are all hidden gets uniform weights instead of zeros. HF transformers fixed the same BERT
mask in https://github.com/huggingface/transformers/pull/17306 ("Fix -1e4 as attn mask").
Ported into attention_weights (02); scaled_dot_product_attention uses it (charged-twice check).
Expected id: mask-fill-finite.
"""

import math

import torch

from torch import nn

def attention_weights(queries, keys, mask=None):
    attention_scores = torch.matmul(queries, keys.transpose(-1, -2))
    attention_scores = attention_scores * (1.0 / math.sqrt(float(keys.shape[-1])))
    if mask is not None:
        attention_mask = (~mask).to(attention_scores.dtype)  # BERT: 1 = attend, 0 = hidden
        adder = (1.0 - attention_mask) * -10000.0
        attention_scores = attention_scores + adder
    return torch.softmax(attention_scores, dim=-1)
