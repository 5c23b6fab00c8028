"""Which helper exercises the grader may stand in for, to verify a forgiveness: a case found right but
for the student's own faulty helper (a RightGivenHelper) is run again with that helper replaced, in the
student's process, by a stand-in that asks the grader for each call's right result (grader.inside.stand_in,
grader.grading.oracle), and keeps its points only if the student's code is right then. The grader checks
that run's outputs itself: whatever the student's code raised or returned the first time decides nothing
(issue 33: an exercise that raises "as the right computation would" on a wrong helper's result; issue 34:
an exercise mistake hidden behind a helper's).

The suites name those helpers (``grader.authoring.stand_ins``); nothing of a right helper is written
here or there: the answers come from the reference, or from its recording in a student distribution.
"""
from __future__ import annotations

HELPERS: set[str] = set()
USES: dict[str, tuple[str, ...]] = {}  # an exercise's function -> the student's own helpers it calls by name
RUNS: dict[str, tuple[str, ...]] = {}  # an exercise -> the student's other exercises its checks run (runs())


def uses(exercise: str, *helpers: str) -> None:
    """Declares that ``exercise`` (a function) calls the student's own ``helpers`` by name: each of its calls
    counts the operators run inside those helpers apart, and how many calls of them ran any
    (grader.inside.tracer.Tracer.attribute; ``Reply.within``), so that a loop in a helper is the helper's and a
    loop of the caller's own is the caller's, read on the very call (red team round 24d)."""
    USES[exercise] = tuple(helpers)


def runs(exercise: str, *others: str) -> None:
    """Declares that the checks of ``exercise`` run the student's ``others`` too (02's copy exercise compares the
    student's two classes): a failed case of it may be run again with a right version of a helper those call, as
    of a helper the exercise's own code calls (grader.grading.chains)."""
    RUNS[exercise] = tuple(others)


def stand_ins(*names: str) -> None:
    """Declares the helper exercises (functions or classes) that a verification may stand in for."""
    HELPERS.update(names)


def has_stand_in(helper: str) -> bool:
    return helper in HELPERS


def verifiable(helpers) -> bool:
    """Whether every one of ``helpers`` can be stood in for."""
    return bool(helpers) and all(h in HELPERS for h in helpers)


def modules_of(course, assignment, helpers) -> dict[str, str]:
    """Where each of ``helpers`` that is no exercise of ``assignment`` lives: the module of the course's
    assignment that has it as an exercise (04's MultiHeadAttentionWrapper stacks 03's CausalAttention, which
    the student's module may import only where the wrapper is made): ``{helper: module name}``."""
    found = {}
    for name in helpers:
        if name in assignment.exercises:
            continue
        owner = next((a for a in course.assignments if name in a.exercises), None)
        if owner is not None:
            found[name] = owner.module_name
    return found


def restore(student) -> None:
    """The student's own helpers back: the worker that held the stand-ins ends, and the next check imports
    the module afresh, so that nothing a stand-in answered outlives its verification in the student's
    memory (red team round 9: a module-level list kept the answers for a later call's error message to
    show); from now on the stand-ins' questions are refused."""
    student.oracle = None
    student.renew()
