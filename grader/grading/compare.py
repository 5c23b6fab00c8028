"""Comparing a student's output with the reference, and saying precisely how they differ.

Messages describe the student's output (type, shape, dtype, where and by how much it is off), never
the reference's values, which on hidden cases are the grader's to keep.
"""
from __future__ import annotations

from grader.config import Tolerance


def shape_str(shape) -> str:
    return "[" + ", ".join(str(s) for s in shape) + "]"


def describe(value) -> str:
    import torch

    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {shape_str(value.shape)} and dtype {str(value.dtype).replace('torch.', '')}"
    if isinstance(value, tuple):
        return f"a tuple of {len(value)}"
    return "None" if value is None else f"a {type(value).__name__}"


def difference(actual, expected, tol: Tolerance, what: str = "the output", *, _explain: bool = True) -> str | None:
    """None when ``actual`` matches ``expected`` within ``tol``; otherwise one sentence saying how not
    (``_explain=False``: :func:`agrees`'s question, any true string)."""
    import torch

    if isinstance(expected, tuple):
        if not isinstance(actual, tuple) or len(actual) != len(expected):
            return f"{what} should be a tuple of {len(expected)} tensors, but is {describe(actual)}"
        for index, (a, e) in enumerate(zip(actual, expected)):
            problem = difference(a, e, tol, f"{what}[{index}]", _explain=_explain)
            if problem:
                return problem
        return None
    if expected is None:
        return None if actual is None else f"{what} should be None, but is {describe(actual)}"
    if not isinstance(actual, torch.Tensor):
        return f"{what} should be a tensor of shape {shape_str(expected.shape)}, but is {describe(actual)}"
    if actual.shape != expected.shape:
        return f"{what} has shape {shape_str(actual.shape)}, expected {shape_str(expected.shape)}"
    if actual.dtype != expected.dtype:
        return f"{what} has dtype {actual.dtype}, expected {expected.dtype} (outputs keep the input's dtype)"
    if expected.dtype == torch.bool or not expected.is_floating_point():
        wrong = actual.cpu() != expected.cpu()
        if wrong.any():
            if not _explain:
                return OFF
            index = tuple(wrong.nonzero()[0].tolist())
            return f"{what} differs at {wrong.sum().item()} of {wrong.numel()} entries, first at index {index}"
        return None
    if actual.device == expected.device and torch.equal(actual, expected):  # the same bits: within any tolerance
        return None  # (an equal infinity is no error either; NaN is never equal, so it is looked at below)
    return _numbers_differ(actual.detach().cpu().reshape(-1), expected.detach().cpu().reshape(-1), expected.shape,
                           tol, what, _explain)


def agrees(actual, expected, tol: Tolerance) -> bool:
    """Whether :func:`difference` would find nothing, without saying what: a diagnosis asks it of many
    candidates, most of them wrong, so it stops at the first chunk that is off and writes no sentence."""
    return difference(actual, expected, tol, _explain=False) is None


CHUNK = 1 << 18  # entries compared at a time, in float64: the comparison's own memory stays this small
OFF = "off"  # what difference(..., _explain=False) says of numbers that differ


def _numbers_differ(actual, expected, shape, tol: Tolerance, what: str, explain: bool = True) -> str | None:
    """:func:`difference` for floating-point tensors of one shape, flattened: a chunk at a time, so that
    a large output (at most the reply limit) costs the grader no more than itself; ``explain=False``: OFF at
    the first chunk that differs, the sentence unwritten."""
    import torch

    # a tolerance may be a tensor (a slack measured per entry): compared a chunk at a time alongside
    atol, rtol = (t.broadcast_to(shape).reshape(-1) if isinstance(t, torch.Tensor) else t for t in (tol.atol, tol.rtol))

    def part(t, start):
        return t[start:start + CHUNK] if isinstance(t, torch.Tensor) else t

    scalar = not isinstance(atol, torch.Tensor) and not isinstance(rtol, torch.Tensor)
    nans, first_nan, wrong_count = 0, None, 0
    worst = None  # (error - allowed, flat index, error, allowed)
    for start in range(0, actual.numel(), CHUNK):
        a = actual[start:start + CHUNK].double()
        e = expected[start:start + CHUNK].double()
        # the usual case, a chunk all right, in one call: isclose's rule is the one below (equal, NaN where
        # NaN is expected, or |a - e| <= atol + rtol |e| for finite errors), so any other chunk is looked at
        if scalar and first_nan is None and bool(torch.isclose(a, e, rtol=rtol, atol=atol, equal_nan=True).all()):
            continue
        nan = a.isnan() & ~e.isnan()
        if nan.any():
            nans += int(nan.sum())
            if first_nan is None:
                first_nan = start + int(nan.nonzero()[0])
        if first_nan is not None:
            if not explain:
                return OFF
            continue  # NaN is said first; the rest of the comparison is not needed
        same_inf = (a == e) & e.isinf()
        error = (a - e).abs().masked_fill(same_inf | (a.isnan() & e.isnan()), 0.0)
        error = error.nan_to_num(nan=float("inf"))  # a number where NaN is expected is no match either
        allowed = part(atol, start) + part(rtol, start) * e.abs().masked_fill(e.isinf() | e.isnan(), 0.0)
        wrong = error > allowed
        if not wrong.any():
            continue
        if not explain:
            return OFF
        wrong_count += int(wrong.sum())
        excess = (error - allowed).masked_fill(~wrong, float("-inf"))
        at = int(excess.argmax())
        if worst is None or excess[at].item() > worst[0]:
            worst = (excess[at].item(), start + at, error[at].item(), allowed[at].item())
    if first_nan is not None:
        index = _unravel(first_nan, shape)
        return f"{what} has NaN at {nans} entries (first at index {index}) where a number is expected"
    if worst is None:
        return None
    _, flat, error, allowed = worst
    index = _unravel(flat, shape)
    return (f"{what} is off at {wrong_count} of {actual.numel()} entries; the largest error is "
            f"{error:.3g} at index {index} (allowed {allowed:.1g})")


def _unravel(flat: int, shape) -> tuple[int, ...]:
    """The index of the ``flat``-th entry of a tensor of ``shape`` (row-major)."""
    index = []
    for size in reversed(shape):
        flat, at = divmod(flat, size)
        index.append(at)
    return tuple(reversed(index))


FLOAT32_EPS = 2.0 ** -23  # the gap between 1 and the next float32 number
FLOAT32_EPSILONS = 8  # how far, in float32 epsilons of the output's largest magnitude, float32 rounding may move it


def rounded_in_float32(what: str = "output") -> str:
    """The likely cause of a float64 result right only to float32's precision (:func:`float32_precision`)."""
    return (f"your {what} is right only to float32's precision: somewhere this is computed in float32 (a .float(), "
            "a float32 table or constant such as torch.tensor(...) without dtype) though the inputs are float64, "
            "or a tiny constant such as an eps of 1e-8 is added")


def float32_precision(actual, expected) -> bool:
    """Whether float64 ``actual``, wrong against float64 ``expected``, is right to float32's precision:
    off somewhere, but nowhere by more than FLOAT32_EPSILONS float32 epsilons of the largest expected
    magnitude (where a float32 computation's rounding of the same result lands: an entry near zero
    carries the rounding of the larger terms it is summed from, so the scale is the tensor's, not the
    entry's). For a tuple: its first output that differs. Never for another dtype: a float32 output is
    graded at float32's own tolerance."""
    import torch

    if isinstance(expected, tuple):
        if not isinstance(actual, tuple) or len(actual) != len(expected):
            return False
        differing = [(a, e) for a, e in zip(actual, expected) if not (isinstance(a, torch.Tensor) and isinstance(
            e, torch.Tensor) and a.shape == e.shape and a.dtype == e.dtype and torch.equal(a.cpu(), e.cpu()))]
        return bool(differing) and float32_precision(*differing[0])
    if not (isinstance(actual, torch.Tensor) and isinstance(expected, torch.Tensor)):
        return False
    if actual.dtype != torch.float64 or expected.dtype != torch.float64 or actual.shape != expected.shape:
        return False
    actual, expected = actual.detach().cpu().reshape(-1), expected.detach().cpu().reshape(-1)
    worst = scale = 0.0
    for start in range(0, actual.numel(), CHUNK):  # a chunk at a time, as _numbers_differ
        a, e = actual[start:start + CHUNK], expected[start:start + CHUNK]
        finite = e.isfinite()
        if not bool((a[~finite] == e[~finite]).all()) or not bool(a[finite].isfinite().all()):
            return False  # a NaN or an infinity where the right answer has none (or another) is no rounding
        if bool(finite.any()):
            worst = max(worst, float((a[finite] - e[finite]).abs().max()))
            scale = max(scale, float(e[finite].abs().max()))
    return 0.0 < worst <= FLOAT32_EPSILONS * FLOAT32_EPS * scale


def manual_seed(seed: int) -> None:
    """``torch.manual_seed`` for the grading process: the CPU generator, and CUDA's once it is in use.
    torch.manual_seed itself formats the call stack three times (for CUDA, XPU and MTIA not yet
    initialised) on every call: about 85 ms of every submission's grading."""
    import torch

    torch.random.default_generator.manual_seed(seed)
    if torch.cuda.is_initialized():
        torch.cuda.manual_seed_all(seed)


def widen(tolerance, slack, expected):
    """``tolerance`` with ``slack`` added to its atol: a number, or a tensor of ``expected``'s shape
    (entry by entry; folded to its largest entry where ``expected`` is not one tensor of that shape)."""
    import dataclasses

    import torch

    if isinstance(slack, torch.Tensor):
        if not (isinstance(expected, torch.Tensor) and slack.shape == expected.shape):
            slack = float(slack.max()) if slack.numel() else 0.0
        elif not bool((slack > 0).any()):
            return tolerance
        else:
            return dataclasses.replace(tolerance, atol=tolerance.atol + slack)
    return dataclasses.replace(tolerance, atol=tolerance.atol + slack) if slack else tolerance
