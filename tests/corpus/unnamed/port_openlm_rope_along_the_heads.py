"""apply_rope: x permuted as if [B, T, H, hd], so head h is rotated by the angles of position offset + h (round 7 porter, blind: numbers only before).

Bug port: mlfoundations/open_lm, open_lm/model.py RotaryWithCast
(https://github.com/mlfoundations/open_lm/issues/4): q, k are [B, T, H, hd] but the rotary module
expects [B, H, T, hd] (seq_dim = -2), so the positions were applied along the HEAD axis. Ported into
apply_rope (06): the course passes [B, H, T, hd]; the port permutes as open_lm did (treating dim 1 as
the sequence), i.e. head h gets the angles of position offset + h.
"""
import torch

from torch import nn

def apply_rope(x, cos, sin, offset=0):
    x = x.permute(0, 2, 1, 3)  # open_lm's q arrives as [B, T, H, hd]; mis-applied permutation
    seq_len, head_dim = x.shape[-2], x.shape[-1]
    c = cos[offset:offset + seq_len]
    s = sin[offset:offset + seq_len]
    x1, x2 = x[..., : head_dim // 2], x[..., head_dim // 2:]
    rotated = torch.cat((-x2, x1), dim=-1)
    out = x * c + rotated * s
    return out.permute(0, 2, 1, 3).to(x.dtype)
