"""simple_self_attention: took the softmax along dim=0 (the queries) instead of the last dim"""
import torch


def simple_self_attention(inputs):
    scores = attention_scores(inputs)
    weights = softmax(scores, dim=0)
    return weights @ inputs
