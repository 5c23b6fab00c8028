"""apply_rope: the rotation tables are cached under a key made of the sequence length only, so a later call with the
same length and another offset reuses the first offset's angles (cache-position-not-advanced).

Source: https://github.com/lucidrains/rotary-embedding-torch rotate_queries_or_keys (cache_key = f'freqs:{seq_len}')
Bug report: https://github.com/lucidrains/rotary-embedding-torch/issues/11 ("offset parameter is not being cached").
Port: a module-level cache keyed the buggy way around the course's half-split rotation (the course's tables
replace the module's freqs).
"""
import torch

_rotary_cache = {}


def _rotary_freqs(cos, sin, seq_len, offset, cache_key):
    if cache_key in _rotary_cache:
        return _rotary_cache[cache_key]
    freqs = (cos[offset:offset + seq_len], sin[offset:offset + seq_len])
    _rotary_cache[cache_key] = freqs
    return freqs


def apply_rope(x, cos, sin, offset=0):
    seq_len = x.shape[-2]
    c, s = _rotary_freqs(cos, sin, seq_len, offset, cache_key=f'freqs:{seq_len}:{x.shape[-1]}')
    c, s = c.to(x.device), s.to(x.device)
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    rotated = torch.cat((-x2, x1), dim=-1)
    return (x * c + rotated * s).to(x.dtype)
