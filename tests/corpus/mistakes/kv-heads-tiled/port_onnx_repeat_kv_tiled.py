"""repeat_kv: the ONNX Attention-op GQA reference tiles the kv heads ([K1, K2, K1, K2]) where repeat_interleave gives [K1, K1, K2, K2] (https://github.com/onnx/onnx/pull/7274)"""
import torch


def repeat_kv(x, group_size):
    return x.repeat(1, group_size, 1, 1)  # the bug: Tile, not repeat_interleave
