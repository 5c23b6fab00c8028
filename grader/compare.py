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


def difference(actual, expected, tol: Tolerance, what: str = "the output") -> str | None:
    """None when ``actual`` matches ``expected`` within ``tol``; otherwise one sentence saying how not."""
    import torch

    if isinstance(expected, tuple):
        if not isinstance(actual, tuple) or len(actual) != len(expected):
            return f"{what} should be a tuple of {len(expected)} tensors, but is {describe(actual)}"
        for index, (a, e) in enumerate(zip(actual, expected)):
            problem = difference(a, e, tol, f"{what}[{index}]")
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
            index = tuple(wrong.nonzero()[0].tolist())
            return f"{what} differs at {wrong.sum().item()} of {wrong.numel()} entries, first at index {index}"
        return None
    a = actual.detach().cpu().double()
    e = expected.detach().cpu().double()
    nan = a.isnan() & ~e.isnan()
    if nan.any():
        index = tuple(nan.nonzero()[0].tolist())
        return f"{what} has NaN at {nan.sum().item()} entries (first at index {index}) where a number is expected"
    same_inf = (a == e) & e.isinf()
    error = (a - e).abs().masked_fill(same_inf | (a.isnan() & e.isnan()), 0.0)
    error = error.nan_to_num(nan=float("inf"))  # a number where NaN is expected is no match either
    allowed = tol.atol + tol.rtol * e.abs().masked_fill(e.isinf() | e.isnan(), 0.0)
    wrong = error > allowed
    if not wrong.any():
        return None
    worst = (error - allowed).masked_fill(~wrong, float("-inf")).flatten().argmax()
    index = tuple(int(i) for i in torch.unravel_index(worst, e.shape))
    return (f"{what} is off at {wrong.sum().item()} of {wrong.numel()} entries; the largest error is "
            f"{error.flatten()[worst].item():.3g} at index {index} (allowed {allowed.flatten()[worst].item():.1g})")


def manual_seed(seed: int) -> None:
    """``torch.manual_seed`` for the grading process: the CPU generator, and CUDA's once it is in use.
    torch.manual_seed itself formats the call stack three times (for CUDA, XPU and MTIA not yet
    initialised) on every call: about 85 ms of every submission's grading."""
    import torch

    torch.random.default_generator.manual_seed(seed)
    if torch.cuda.is_initialized():
        torch.cuda.manual_seed_all(seed)
