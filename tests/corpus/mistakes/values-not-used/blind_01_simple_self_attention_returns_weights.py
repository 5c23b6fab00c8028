"""simple_self_attention: Stops after the softmax and returns the [..., T, T] attention weights, never multiplying them by the inputs (the values) (written blind, from the contract alone)."""
import torch


def simple_self_attention(inputs):
    scores = attention_scores(inputs)
    return softmax(scores, dim=-1)
