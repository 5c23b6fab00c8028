"""Naming the student's mistake: the output of a known mistake is compared with the student's.

Suites describe the mistakes a check can reveal as candidates ``(misconception id or None,
explanation for the student, the output that mistake gives)``; the output may be a tensor or a
function that computes it (only called when a check failed). A diagnosis is claimed only when it
explains the student's output, that is, when the candidate's output matches it within the dtype's
tolerance. Otherwise the failure stays as it was: the precise difference, and no guess.
"""
from __future__ import annotations

from typing import Callable, Iterable

from grader.compare import difference
from grader.harness import CheckFailed, StudentFault

Candidate = tuple  # (misconception id or None, explanation, tensor or zero-argument function)


def matches(grade, out, wrong) -> bool:
    """Whether the student's ``out`` is, within tolerance, the output ``wrong`` of a known mistake."""
    import torch

    if not isinstance(out, torch.Tensor) or not isinstance(wrong, torch.Tensor) or out.shape != wrong.shape:
        return False
    wrong = wrong.detach().to("cpu", out.dtype)  # candidates may be computed in float64: compare as the student
    return difference(out, wrong, grade.tolerance(wrong)) is None


def name_mistake(grade, failure: CheckFailed, out, candidates: Iterable[Candidate]) -> CheckFailed:
    """``failure`` with the first candidate mistake that explains ``out`` named; ``failure`` if none does."""
    import torch

    if failure.misconceptions:  # the harness already named it (input-mutated, wrong-dtype, ...)
        return failure
    for misconception, explanation, wrong in candidates:
        if callable(wrong):
            with torch.no_grad():
                wrong = wrong()
        if matches(grade, out, wrong):
            return CheckFailed(f"{failure.message}; {explanation}", (misconception,) if misconception else ())
    return failure


def diagnosed(grade, check: Callable, rerun: Callable, candidates: Iterable[Candidate],
              explain_output: Callable | None = None):
    """Run ``check()``; when it fails, get the student's output again with ``rerun()`` and name the
    mistake that explains it. ``explain_output(out)`` may name one from the output alone first,
    returning ``(misconception, explanation)`` or None."""
    try:
        return check()
    except CheckFailed as failure:
        if failure.misconceptions:
            raise
        try:
            out = rerun()
        except StudentFault:
            raise failure from None
        if explain_output is not None and (found := explain_output(out)):
            misconception, explanation = found
            raise CheckFailed(f"{failure.message}; {explanation}", (misconception,)) from None
        raise name_mistake(grade, failure, out, candidates) from None
