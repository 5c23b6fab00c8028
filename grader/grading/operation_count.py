"""How many operators the reference runs for a call: the measure a vectorised answer's count is held to.

A vectorised exercise is checked by its count of torch operations, which may not grow with the sequence
(grader.grading.fixture.Grade.expect_not_growing). A Python loop can keep that count flat by running
operations that do nothing useful, fewer as the sequence grows (issue 44, round 6: attention_scores as a
loop over token pairs padded to 40,000 operations scored 15/15). What a vectorised computation runs does
not depend on the sequence, and is about what the reference runs; so a call may run at most
``FACTOR`` times the reference's count on the same inputs (and ``FLOOR`` in any case): room for every
honest style (einsum, a loop over heads, a guarded softmax), none for a loop over the tokens of a long
case, whatever it pads. The count is the dispatcher's, as the worker counts the student's
(grader.inside.tracer.Tracer), in the grading process, on the reference.
"""
from __future__ import annotations

FACTOR = 8
FLOOR = 64

_COUNTER: list = []


def _counter_class():
    """A dispatch mode that counts operators, made once (torch is imported lazily)."""
    if _COUNTER:
        return _COUNTER[0]
    from torch.utils._python_dispatch import TorchDispatchMode

    from grader.inside.tracer import uncompiled

    class Counting(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.count = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.count += 1
            return func(*args, **(kwargs or {}))

    _COUNTER.append(uncompiled(Counting))
    return Counting


def operations(fn, args, kwargs) -> int:
    """How many aten operators ``fn(*args, **kwargs)`` runs."""
    with _counter_class()() as counting:
        fn(*args, **kwargs)
    return counting.count


def bound(reference_count: int) -> int:
    """The most operations a vectorised answer may run for a call the reference runs in ``reference_count``."""
    return max(FLOOR, FACTOR * reference_count)
