"""How far a right answer may lie from the reference's: the room the problem itself allows (course-spec:
"an answer is right when it lies within what rounding the inputs and the intermediate results by a few
units in the last place would move the exact (float64) result"). The reference's own float32 rounding
(its float32 result against its float64 one), how far the exact result moves when the float32 inputs move
by a couple of units in the last place of their scale, and the rounding every softmax makes of its
exponents' shift; each SLACK_FACTOR times over. grader.grading.fixture.Grade applies them."""
from __future__ import annotations

import math

from grader.inside.protocol import mapped


SLACK_FACTOR = 8.0  # how much less exactly than the reference a correct implementation may round
PERTURB_ULPS = 2.0  # how far (units in the last place of float32) the inputs move to measure the conditioning
PERTURBED_NUMEL = 4096  # inputs larger than this (the long and memory-bound cases) are not perturbed: too slow
PATTERNS = 3  # sign patterns of the perturbation: entry j moves up or down by bit p of its index


def _perturbed(widened, originals, pattern: int):
    """The float64 copies of the case's float32 inputs, each entry moved by PERTURB_ULPS units in the
    last place of the tensor's largest entry (the scale of the intermediate results a formulation
    rounds: a max-shifted exponent, a log-sum-exp, a sum of products), up or down by bit ``pattern``
    of its index: over the patterns, neighbours (fewer than 2**PATTERNS apart) move apart once, so the
    difference a softmax or a score depends on is moved too. Other arguments as they are."""
    import torch

    def move(wide, original):
        if isinstance(wide, torch.Tensor) and isinstance(original, torch.Tensor) and original.dtype == torch.float32:
            finite = wide[torch.isfinite(wide)]
            scale = float(finite.abs().max()) if finite.numel() else 0.0
            index = torch.arange(wide.numel(), dtype=torch.int64).reshape(wide.shape)
            signs = ((index >> pattern) & 1).to(torch.float64) * 2 - 1
            return wide + PERTURB_ULPS * torch.finfo(torch.float32).eps * scale * signs.to(wide.device)
        if isinstance(wide, (list, tuple)) and isinstance(original, (list, tuple)):
            return type(wide)(move(w, o) for w, o in zip(wide, original))
        return wide

    return tuple(move(w, o) for w, o in zip(widened, originals))


def _room(narrow, wide, moved: tuple):
    """SLACK_FACTOR times the reference's own rounding (the largest gap between ``narrow`` and ``wide``,
    a number) plus, entry by entry, how far ``moved[0]`` (the exact result of perturbed inputs), if
    given, lands from ``wide``: a tensor of ``narrow``'s shape, or a number where there is none."""
    import torch

    own = _gap(narrow, wide)
    if not moved:
        return own
    moved = moved[0]
    if not (isinstance(narrow, torch.Tensor) and isinstance(wide, torch.Tensor) and isinstance(moved, torch.Tensor)) \
            or not (narrow.shape == wide.shape == moved.shape) or not narrow.is_floating_point():
        return own
    wide, moved = wide.detach().double().cpu(), moved.detach().double().cpu()
    movement = (moved - wide).abs().masked_fill((moved == wide) | ~torch.isfinite(moved - wide), 0.0)
    return own + SLACK_FACTOR * movement


def _exponent_room(x, expected, grad_out, dim):
    """The rounding of a softmax of float32 ``x`` in any formulation: its exponents are shifted by a
    maximum or a log-sum-exp that is rounded at the scale M of the largest entry, so each weight y may
    be off by eps·M·y relatively, and each gradient entry by eps·M·y·(|g| + Σ|y·g|) for the output
    gradient g. SLACK_FACTOR times that, for the output and the gradient of ``x`` (None without one)."""
    import torch

    if not (isinstance(x, torch.Tensor) and x.dtype == torch.float32 and isinstance(expected, torch.Tensor)) \
            or expected.shape != x.shape:
        return 0.0, None
    finite = x[torch.isfinite(x)]
    scale = float(finite.abs().max()) if finite.numel() else 0.0
    relative = SLACK_FACTOR * torch.finfo(torch.float32).eps * (scale + math.log(max(x.shape[dim], 1)) + 1)
    y = expected.detach().double().cpu().abs()
    room = relative * y
    if grad_out is None:
        return room, None
    g = grad_out.detach().double().cpu().abs()
    return room, relative * y * (g + (y * g).sum(dim=dim, keepdim=True))


def _widest(a, b):
    """The larger room of two, entry by entry where either is a tensor."""
    import torch

    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return torch.maximum(torch.as_tensor(a, dtype=torch.float64), torch.as_tensor(b, dtype=torch.float64))
    return max(a, b)


def _widened(value):
    """float32 tensors as float64 (the same values), the rest as they are."""
    import torch

    return mapped(lambda leaf: leaf.double() if isinstance(leaf, torch.Tensor) and leaf.dtype == torch.float32
                  else leaf, value)


def _gap(narrow, wide) -> float:
    """SLACK_FACTOR times the largest finite difference between ``narrow`` and ``wide``."""
    import torch

    if isinstance(narrow, tuple) and isinstance(wide, tuple):
        return max((_gap(n, w) for n, w in zip(narrow, wide)), default=0.0)
    if not (isinstance(narrow, torch.Tensor) and isinstance(wide, torch.Tensor)) or narrow.shape != wide.shape \
            or not narrow.is_floating_point():
        return 0.0
    gap = (narrow.detach().double().cpu() - wide.detach().double().cpu()).abs()
    gap = gap[torch.isfinite(gap)]
    return SLACK_FACTOR * float(gap.max()) if gap.numel() else 0.0
