"""Attempt 11 at attention_scores.

MISTAKE: Transposes dims 0 and 1 (inputs.transpose(0, 1)) instead of the last two dims (-2, -1): right for a single [T, d] sequence, wrong/raises for batches [..., T, d].
"""
import torch


def attention_scores(inputs):
    """MISTAKE: Transposes dims 0 and 1 (inputs.transpose(0, 1)) instead of the last two dims (-2, -1): right for a single [T, d] sequence, wrong/raises for batches [..., T, d]."""
    return inputs @ inputs.transpose(0, 1)
