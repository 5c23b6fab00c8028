"""apply_rope: the rotary tables are sliced [:seqlen] instead of [start_pos:start_pos + seqlen] in the KV-cache
branch, so cached tokens are rotated as if they sat at position 0 (cache-position-not-advanced).

Source / fix: https://github.com/pytorch/executorch/pull/2010 "Fix a rotary position encoding bug in kv cache"
(examples/models/llama2/llama_transformer.py: freqs_cos = self.freqs_cos[:seqlen] in the use_kv_cache branch).
Port: the course's half-split rotation with the tables sliced the buggy way; offset is accepted but not used.
"""
import torch


def apply_rope(x, cos, sin, offset=0):
    seqlen = x.shape[-2]
    freqs_cos = cos[:seqlen].to(x.device)  # should be cos[offset:offset + seqlen]
    freqs_sin = sin[:seqlen].to(x.device)
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    rotated = torch.cat((-x2, x1), dim=-1)
    return (x * freqs_cos + rotated * freqs_sin).to(x.dtype)
