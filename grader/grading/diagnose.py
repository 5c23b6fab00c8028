"""Naming the student's mistake: the output of a known mistake is compared with the student's.

Suites describe the mistakes a check can reveal as candidates ``(misconception id or None,
explanation for the student, the output that mistake gives)``; the output may be a tensor or a
function that computes it (only called when a check failed). A diagnosis is claimed only when it
explains the student's output, that is, when the candidate's output matches it within the dtype's
tolerance, and no candidate with another id matches too (a case that cannot tell two mistakes apart
names neither). Otherwise the failure stays as it was: the precise difference, and no guess.

When an exercise uses another one (simple_self_attention a softmax, the classes an attention
function, a wrapper the student's CausalAttention), :func:`blame` names the root cause: the student's
own helper, run in their worker on this case's intermediate values, gives a wrong result, and the
exercise done right with that result is exactly the student's output.

The lesson's own wrong computations (attention with one thing done wrong, softmaxes along the wrong
dimension...) are course content, not the engine's: they live with the suites, in ``suites/lesson/``.
"""
from __future__ import annotations

from typing import Callable, Iterable

from grader.grading.compare import agrees, shape_str, widen
from grader.grading.outcomes import (CheckFailed, GradientFailure, RaisedFailure, RightGivenHelper, StudentFault,
                                     last_line, plain_call)
from grader.grading.models import keeping_calls, recording_now, rehearse
from grader.grading.recorded_outputs import NotReplayable
from grader.grading.stand_ins import has_stand_in

Candidate = tuple  # (misconception id or None, explanation, tensor or zero-argument function)


def matches(grade, out, wrong) -> bool:
    """Whether the student's ``out`` is, within tolerance, the output ``wrong`` of a known mistake."""
    import torch

    if isinstance(out, tuple) and isinstance(wrong, tuple):
        return len(out) == len(wrong) and all(matches(grade, o, w) for o, w in zip(out, wrong))
    if not isinstance(out, torch.Tensor) or not isinstance(wrong, torch.Tensor) or out.shape != wrong.shape:
        return False
    wrong = wrong.detach().to("cpu", out.dtype)  # candidates may be computed in float64: compare as the student
    # within the room the failing case's own answer was given (its rounding at large scores), not the
    # dtype's alone: a name must not depend on whether this seed's draw rounds within the bare tolerance
    return agrees(out, wrong, widen(grade.tolerance(wrong), getattr(grade, "case_slack", 0.0), wrong))


CONTRADICTION = 1000.0  # a candidate contradicts a case when it misses by this many tolerances, not by a rounding


def far(grade, out, wrong) -> bool:
    """Whether the mistake's output ``wrong`` is clearly not the student's ``out``: another shape, or off
    by CONTRADICTION times the dtype's tolerance (a candidate computed in another precision, or with
    long-context rounding, that merely misses is no contradiction)."""
    import dataclasses

    import torch

    if isinstance(out, tuple) and isinstance(wrong, tuple):
        return len(out) != len(wrong) or any(far(grade, o, w) for o, w in zip(out, wrong))
    if not isinstance(out, torch.Tensor) or not isinstance(wrong, torch.Tensor):
        return False
    if out.shape != wrong.shape:
        return True
    tol = grade.tolerance(wrong)
    loose = dataclasses.replace(tol, rtol=tol.rtol * CONTRADICTION, atol=tol.atol * CONTRADICTION)
    return not agrees(out, wrong.detach().to("cpu", out.dtype), loose)


def name_mistake(grade, failure: CheckFailed, out, candidates: Iterable[Candidate], right=None) -> CheckFailed:
    """``failure`` with the candidate mistake that explains ``out`` named; ``failure`` if none does
    (see :func:`first_match`; ``right`` is the right output, when the suite has it at hand)."""
    if failure.misconceptions:  # the harness already named it (input-mutated, wrong-dtype, ...)
        return failure
    ruled_out: set = set()
    found = first_match(grade, out, candidates, right, ruled_out)
    if found is None:
        failure.ruled_out = tuple(sorted(ruled_out))
        return failure
    misconception, explanation = found
    named = CheckFailed(f"{failure.message}; {explanation}", (misconception,) if misconception else ())
    named.ruled_out = tuple(sorted(ruled_out - {misconception}))
    named.unexplained = failure.message  # what it says should another case contradict the explanation
    return named


def diagnosed(grade, check: Callable, rerun: Callable | None, candidates: Iterable[Candidate],
              explain_output: Callable | None = None, right: Callable | None = None,
              root_cause: Callable | None = None):
    """Run ``check()``; when it fails, name the mistake that explains the student's output: the one
    the failure carries (``CheckFailed.out``), or else what ``rerun()`` gets again. ``root_cause(failure,
    out)`` may blame a helper from another exercise (see :func:`blame`); if it does not, the first of
    ``candidates`` that recomputes the output names it; if none does, ``explain_output(out)`` may name
    one from the output alone, returning ``(misconception, explanation)`` or None; ``right()`` gives the
    right output. While a release records the lesson's computations, a passing check's candidates and right
    output are computed all the same (grader.grading.models.rehearse): a failing student's diagnosis on
    the student's side finds them on record."""
    try:
        passed = check()
        if recording_now():  # (the root cause as it would run on a wrong output: the helpers' mistakes it composes;
            # and on a raise, whose explanations compute the exercise on a slice of the case: REHEARSED_RAISE)
            rehearse(right or (lambda: None), *(_output_of(c) for c in _until_unreplayable(candidates)),
                     lambda: root_cause and root_cause(CheckFailed("rehearsed"), passed),
                     lambda: root_cause and root_cause(RaisedFailure(REHEARSED_RAISE), None))
        return passed
    except StudentFault as fault:
        raise raised(grade, fault, root_cause) from None
    except CheckFailed as failure:
        if failure.fault is not None:  # a crash that names a mistake: the helper's, when it raises so too
            raise raised(grade, failure.fault, root_cause, failure) from None
        if failure.misconceptions and not (failure.misconceptions == ("wrong-dtype",) and failure.out is not None
                                           and root_cause is not None):
            raise
        if failure.misconceptions:  # a dtype right given the student's own helper is the helper's mistake
            raise cause(grade, root_cause, failure, failure.out) or failure from None
        out = failure.out
        if out is None:
            if rerun is None:
                raise
            try:
                out = rerun()
            except StudentFault:
                raise failure from None
        blamed = cause(grade, root_cause, failure, out) if root_cause is not None else None
        if blamed is not None and not getattr(blamed, "by_stand_in_only", False):
            raise blamed from None  # first: a helper's mistake seen again here is the helper's
        try:
            right_out = right() if right else None
        except NotReplayable:  # a replayed run has no reference to compute it with
            right_out = None
        # then a mistake recomputed to the student's output, before what the output alone suggests: an
        # inverted mask that leaves a query no key gives NaN there, which is the mask's doing, not the
        # softmax's (the name must not depend on whether this seed's mask left such a query)
        named = name_mistake(grade, failure, out, candidates, right_out)
        if named is failure and explain_output is not None and (found := explain_output(out)):
            misconception, explanation = found
            named = CheckFailed(f"{failure.message}; {explanation}", (misconception,) if misconception else ())
        if blamed is not None:  # a wrong helper that does not explain the output: the run with a right one decides
            blamed.unverified = named
            raise blamed from None
        raise named from None


# a raise as a release rehearses one: a broadcast's shape mismatch whose last line names every size up to 256, so that
# a root cause that reads the sizes of a crash (mentions, shape_mismatch) goes on to compute what explains it
REHEARSED_RAISE = StudentFault("error", "The size of tensor a (2) must match the size of tensor b (3) at non-singleton "
                                        "dimension 1 (rehearsed: " + " ".join(map(str, range(257))) + ")",
                               "RuntimeError")


def _output_of(candidate) -> Callable:
    """What computing ``candidate``'s output takes (a search for a factor: the factors it is usually off by)."""
    if isinstance(candidate, FactorFit):
        return lambda: rehearse(*(lambda c=c: candidate.make(c) for c in candidate.usual()))
    wrong = candidate[2]
    return wrong if callable(wrong) else (lambda: None)


def raised(grade, fault: StudentFault, root_cause: Callable | None, named: CheckFailed | None = None) -> Exception:
    """What a raise of the student's code gives: the helper's mistake when the right computation on the
    student's own helper raises the same way (``root_cause`` sees a RaisedFailure), else the fault (or
    ``named``, the failure that names the mistake the crash shows)."""
    if root_cause is None or fault.kind != "error" or not fault.exception:
        return named or fault
    blamed = cause(grade, root_cause, RaisedFailure(fault), None)
    if isinstance(blamed, RightGivenHelper) and blamed.unverified is not None:
        blamed.unverified = named or fault  # the raise as it would stand without the blame
    return blamed or named or fault


def cause(grade, root_cause: Callable, failure, out):
    """``root_cause(failure, out)``; None where it cannot be had here: it needs the reference itself,
    which a replayed run (a student distribution) does not have, nor any recorded use of it (a
    recording holds the uses of a run that passed: a diagnosis makes none there, and one made in a
    replay would read the next use's record). What it computes from the student's own code and the
    lesson's formulas works on both sides."""
    counted = hasattr(grade, "diagnosing")
    if counted:
        grade.diagnosing += 1
    try:
        return root_cause(failure, out)
    except NotReplayable:
        return None
    finally:
        if counted:
            grade.diagnosing -= 1


def first_match(grade, out, candidates: Iterable[Candidate], right=None, ruled_out: set | None = None):
    """``(misconception, explanation)`` of the first candidate whose output is ``out``, or None.

    A diagnosis must explain the output and nothing else could: when ``out`` is the ``right`` answer
    (a check failed for another reason, such as its gradients), or when candidates with different
    misconceptions all match (this case cannot tell them apart), none is claimed. ``ruled_out``, if
    given, receives the ids whose every candidate was computed here and is far from ``out`` (one that
    merely misses, or that gives nothing for this case, contradicts nothing): this case contradicts
    them, so the exercise names none of them from another case."""
    import torch

    if right is not None and matches(grade, out, right):
        return None
    found, fits, tried, open_ = [], [], set(), set()
    for candidate in _until_unreplayable(candidates):
        if isinstance(candidate, FactorFit):  # given as such (grader.authoring.FactorSearch)
            fits.append(candidate)
            continue
        misconception, explanation, wrong = candidate
        if callable(wrong):
            with torch.no_grad():
                try:
                    wrong = wrong()
                except (RuntimeError, NotReplayable):  # a mistake these shapes do not allow; no reference
                    open_.add(misconception)
                    continue
        if isinstance(wrong, FactorFit):
            fits.append(wrong)  # a search: only when no fixed candidate explains the output
            open_.add(misconception)
            continue
        if matches(grade, out, wrong):
            found.append((misconception, explanation))
        elif far(grade, out, wrong):
            tried.add(misconception)
        else:  # not computed here (None), or a near miss: this case says nothing against it
            open_.add(misconception)
    for fit in fits if not found else ():
        with torch.no_grad():
            try:
                misconception, explanation, wrong = fit.fit(out)
            except (RuntimeError, NotReplayable):  # (a replay has a factor's computation on record for 1 alone)
                continue
        if matches(grade, out, wrong):
            found.append((misconception, explanation))
    if ruled_out is not None:
        ruled_out.update(tried - open_ - {m for m, _ in found} - {None})
    if not found or len({m for m, _ in found}) > 1:
        return None
    if _nothing_finite(out):  # all NaN or inf: it equals every candidate that is too, and tells none apart
        return None  # (asked last: only of an output a candidate's shape matched, never of any size sent)
    return found[0]


class FactorFit:
    """A candidate for a computation off by one constant factor: ``make(c)`` is the computation with
    ``c`` in place of the ``right`` factor (written ``named``, e.g. "1/sqrt(d_k)"); :meth:`fit` finds the
    ``c`` that comes closest to the student's output (any constant, such as 1/8 written by hand), for
    first_match to compare. ``ids``: the misconception named when the best ``c`` is 1 (the factor left
    out) and when it is another one; ``what``: what the factor multiplies, as the feedback says it."""

    def __init__(self, make: Callable, right: float, named: str, *, ids: tuple[str, str], what: str):
        self.make, self.right, self.named = make, right, named
        self.ids, self.what = ids, what

    USUAL = (2.0, 0.5, 4.0, 0.25, 8.0, 0.125, 2 ** 0.5, 2 ** -0.5)  # times the right factor: a slip's usual ones

    def usual(self) -> list[float]:
        """The factors a slip usually gives (none, and the right one off by a power of two or its root): those a
        student distribution has on record (it cannot compute ``make``, an answer, for any other)."""
        return [1.0, *(self.right * f for f in self.USUAL)]

    def fit(self, out):
        import math

        import torch

        if not isinstance(out, torch.Tensor) or torch.as_tensor(self.make(1.0)).shape != out.shape:
            raise RuntimeError("another shape")  # checked before the student's output is converted
        target = out.detach().double()

        def error(c):
            try:
                got = self.make(c).detach().double().cpu()
            except NotReplayable:
                return float("inf")
            gap = (got - target).abs().nan_to_num(float("inf"))
            return gap.max().item() if gap.numel() else 0.0

        if self._on_record():  # a replay (the student side): the closest of the factors on record
            c = min(self.usual(), key=error)
        else:
            c = self._searched(lambda log_c: error(math.exp(log_c)))
        if abs(c / self.right - 1) < 1e-3:  # the right scale: the mistake is elsewhere
            raise RuntimeError("no wrong scale explains this output")
        if abs(c - 1) < 1e-3:
            return self.ids[0], f"{self.what} are not scaled", torch.as_tensor(self.make(1.0))
        return (self.ids[1], f"{self.what} are multiplied by {c:.4g} (divided by {1 / c:.4g}); the scale is "
                             f"{self.named} = {self.right:.4g}", self.make(c))

    @staticmethod
    def _on_record() -> bool:
        """A replay, or a release's rehearsal (which keeps what a replay can use: the usual factors alone)."""
        from grader.grading.models import rehearsing, replaying

        return replaying() or rehearsing()

    @staticmethod
    def _searched(error) -> float:
        """The factor whose ``error`` is least, searched from 1e-3 to 1e3."""
        import math

        grid = [math.log(10) * (i / 10 - 3) for i in range(61)]  # 1e-3 ... 1e3
        best = min(range(len(grid)), key=lambda i: error(grid[i]))
        low, high = grid[max(best - 1, 0)], grid[min(best + 1, len(grid) - 1)]
        ratio = (math.sqrt(5) - 1) / 2
        for _ in range(45):  # golden-section search between the grid's neighbours
            a, b = high - ratio * (high - low), low + ratio * (high - low)
            if error(a) < error(b):
                high = b
            else:
                low = a
        return math.exp((low + high) / 2)


def _until_unreplayable(candidates):
    """The candidates, up to one that needs the reference where a replayed run has none."""
    iterator = iter(candidates)
    while True:
        try:
            yield next(iterator)
        except (StopIteration, NotReplayable):
            return


def mentions(fault: StudentFault, size: int) -> bool:
    """Whether the error the student's code raised names ``size`` (a shape mismatch names both sizes:
    "The size of tensor a (4) must match the size of tensor b (10)")."""
    import re

    lines = fault.message.strip().splitlines()
    return bool(lines) and re.search(rf"(?<![\w.]){size}(?![\w.])", lines[-1]) is not None


def non_finite_unless_named(check: Callable, named: tuple[str, str]):
    """``check()``; a failure that names no mistake, on an output with inf or NaN (where the suite knows
    the right one is finite), names ``named`` (the course's id for it, and what to say). Named after the
    candidates, never before: a mistake of another kind may give NaN too, and is named as such."""
    import torch

    try:
        return check()
    except CheckFailed as failure:
        out = failure.out
        if failure.misconceptions or not isinstance(out, torch.Tensor) or bool(torch.isfinite(out).all()):
            raise
        raise CheckFailed(f"{failure.message}; {named[1]}", (named[0],)) from None


def unstable(out, expected) -> bool:
    """Whether ``out`` holds inf or NaN where ``expected`` (the right answer) is finite."""
    import torch

    if not isinstance(out, torch.Tensor) or not isinstance(expected, torch.Tensor) or out.shape != expected.shape \
            or not out.is_floating_point():
        return False
    return bool((~torch.isfinite(out) & torch.isfinite(expected.to(out.device))).any())


class Raised:
    """What the student's helper did instead of returning: it raised ``exception`` (a type's name)."""

    def __init__(self, exception: str | None, message: str):
        self.exception = exception
        self.message = message


def _nothing_finite(out) -> bool:
    import torch

    parts = out if isinstance(out, tuple) else (out,)
    tensors = [p for p in parts if isinstance(p, torch.Tensor) and p.is_floating_point() and p.numel()]
    return bool(tensors) and not any(bool(torch.isfinite(t).any()) for t in tensors)


def their(grade, name, *args, **kwargs):
    """The student's ``name(*args)``; a :class:`Raised` when it raised; None when it cannot be had
    otherwise (not written, timed out, forbidden)."""
    try:
        return grade.call(name, *args, **kwargs).out
    except StudentFault as fault:
        return Raised(fault.exception, fault.message) if fault.kind == "error" and fault.exception else None
    except CheckFailed as failure:
        return Raised(failure.fault.exception, failure.fault.message) if failure.fault is not None else None


def blame(grade, failure: CheckFailed, out, helper: str, theirs, right, composed: Callable,
          helper_mistakes: Iterable[Candidate] = (), chain: tuple | None = None,
          call: tuple | None = None, provisional: bool = False,
          non_finite: tuple[str, str] | None = None, also: tuple = ()) -> Exception | None:
    """The root cause, when this exercise is right but for a helper it uses from another exercise.

    ``theirs`` is the student's ``helper`` on this case's intermediate inputs, ``right`` what it should
    be, ``composed(h)`` this exercise's right computation with ``h`` as the helper's result. When the
    student's ``out`` is ``composed(theirs)`` and ``theirs`` is wrong, the mistake is the helper's,
    named with the mistake in it (from ``helper_mistakes``, or inf/NaN where the right result is finite:
    the course's ``non_finite`` id and words) if one explains it: under the
    cascade policy "once" (the default) the case keeps its points (:class:`RightGivenHelper`), under
    "every" it fails. None when the helper does not explain ``out``: the failure stays this exercise's.

    A :class:`GradientFailure` (right output, wrong or failed gradients) is judged on the gradients
    given the student's helper, which needs ``chain = (inputs, before, after, helper_kwargs[, right_helper])``: the
    exercise's differentiated inputs, ``before(*inputs)`` the helper's arguments and ``after(h,
    *inputs)`` the output from the helper's result ``h`` (see :func:`composed_gradients`).

    ``call``: the helper's arguments (numbers, None) that gave ``theirs``, where they are plain: the case
    is then kept only if the helper's own exercise grades that very call and finds it wrong (a helper
    call outside what its exercise checks is the caller's; grader.grading.grader.charged_once).

    ``provisional``: ``composed`` itself calls another of the student's helpers (two wrong helpers, the
    output their composition): the case is kept only once the run with right helpers in place of both
    confirms it (grader.grading.pytest_session._verify stands in for one, then the other); without that
    run, ``failure`` stands.

    ``also``: other calls of the helper its contract makes the same as the modelled one, ``(where, args,
    kwargs)`` (an explicit mask that hides nothing for none), which an exercise may make instead: where the
    helper is right on the modelled call but not on one of them, the run with a right helper decides
    (:func:`wrong_elsewhere`)."""
    _judged(grade, helper)
    if keeping_calls():  # a release: the helper's usual mistakes, and this exercise done right on each of them
        rehearse(lambda: composed(right), *(lambda m=m: _composed_mistake(m, composed)
                                           for m in _until_unreplayable(helper_mistakes)))
    called = plain_call(helper, call) if call is not None else None
    found = _blame(grade, failure, out, helper, theirs, right, composed, helper_mistakes, chain, non_finite, also)
    if isinstance(found, RightGivenHelper) and called:
        found.call = called
    if isinstance(found, RightGivenHelper) and provisional and found.unverified is None:
        found.unverified = failure
    return found


def _composed_mistake(mistake, composed) -> None:
    """``composed`` of a helper mistake's output (kept by a release, for the student side's blame)."""
    wrong = mistake[2]() if callable(mistake[2]) else mistake[2]
    if wrong is not None:
        composed(wrong)


def _blame(grade, failure, out, helper, theirs, right, composed, helper_mistakes, chain, non_finite, also=()):
    import torch

    if isinstance(failure, GradientFailure):
        return _blame_gradients(grade, failure, helper, chain) if chain else None
    if isinstance(failure, RaisedFailure):
        return _blame_raised(grade, failure, helper, theirs, right, composed, helper_mistakes, chain, also)
    if isinstance(theirs, Raised) and isinstance(right, torch.Tensor):  # it raises where a right helper returns
        return _unexplained(grade, failure, helper, theirs, right, helper_mistakes, False)
    if not isinstance(theirs, torch.Tensor) or not isinstance(right, torch.Tensor):
        return None
    fits = within(theirs, right)
    if fits and _right(grade, theirs, right):
        found = wrong_elsewhere(grade, failure, helper, chain, also)
        if found is None:  # (04's wrapper given a 03 class's name: "CausalAttention (assignment 03)")
            getattr(grade, "helpers_right", set()).add(helper.split(" (", 1)[0])
        return found
    again = None
    if fits:
        with torch.no_grad():
            try:  # the student's helper's result as it is, dtype included: what their own exercise was given
                again = composed(theirs.to(right.device))
            except NotReplayable:  # the student side has no answer on record for it: the stand-in decides
                if has_stand_in(helper) and grade.cascades == "once":
                    said = _helper_said(grade, failure, helper, theirs, right, helper_mistakes, non_finite,
                                        stand_in_decides)
                    said.composition_unrecorded = True
                    return said
            except Exception:  # noqa: BLE001 - a right computation cannot take it: the output is not explained
                again = None
    if again is None or not (matches(grade, out, again) and getattr(out, "dtype", None) == getattr(again, "dtype", None)):
        return _unexplained(grade, failure, helper, theirs, right, helper_mistakes, fits)
    return _helper_said(grade, failure, helper, theirs, right, helper_mistakes, non_finite, helper_at_fault)


def _helper_said(grade, failure, helper, theirs, right, helper_mistakes, non_finite, blame_with):
    """The helper blamed (``blame_with``: helper_at_fault, or stand_in_decides where only the run with a right
    helper can confirm it), said with its own named mistake first (an inverted mask also gives NaN rows), then
    inf/NaN as such."""
    named = first_match(grade, theirs, helper_mistakes, right)
    found = named or (non_finite if non_finite and unstable(theirs, right) else None)
    misconception, detail = found if found else (None, "it gives a wrong result on this case's inputs")
    blamed = blame_with(grade, failure, helper, detail, misconception)
    if isinstance(blamed, RightGivenHelper):  # the helper's mistake by its own id; inf or NaN is a symptom of many
        blamed.named = (named[0] if named else None) or ""
    return blamed


def _unexplained(grade, failure, helper: str, theirs, right, helper_mistakes, fits: bool) -> Exception | None:
    """The helper is wrong on this case's inputs, and the grader's own computation from its result is not
    the student's output: the exercise may be wrong too, or use the helper in a way the grader does not
    model (twice, on other arguments). Where the helper has a stand-in, the check is run again with a
    right one (issue 46: a helper's breakage never hides the exercise's own mistake, nor silences its
    name; nor, right with a right helper, is the exercise charged for the helper's): right then, the case
    keeps its points as any right-given-your-helper case; wrong, that run names the exercise's own
    mistake. Only that run decides (``by_stand_in_only``: a student distribution that cannot have it
    keeps the failure). None without a stand-in: the failure stays this exercise's."""
    import torch

    if not has_stand_in(helper) or grade.cascades != "once":
        return None
    # (a mistake that changes the shape is named too: scores K Qᵀ where the queries and keys differ in number)
    found = first_match(grade, theirs, helper_mistakes, right) if isinstance(theirs, torch.Tensor) else None
    if found is None and isinstance(theirs, Raised):
        found = (None, f"it raises {theirs.exception} on this case's inputs")
    if found is None:  # (fits: within(theirs, right), which _blame worked out)
        found = (None, "it gives a wrong result on this case's inputs" if fits and theirs.shape == right.shape
                 else f"it returns {_described(theirs)} on this case's inputs")
    misconception, detail = found
    return stand_in_decides(grade, failure, helper, detail, misconception)


def stand_in_decides(grade, failure: CheckFailed, helper: str, detail: str, misconception: str | None = None):
    """:func:`helper_at_fault`, kept only by the run with a right ``helper`` in place of the student's
    (``by_stand_in_only``): the grader's own computation from the helper's result does not give the student's
    output, or cannot be made; a student distribution, which cannot have that run, keeps the failure."""
    blamed = helper_at_fault(grade, failure, helper, detail, misconception, provisional=True)
    blamed.by_stand_in_only = True
    return blamed


def _judged(grade, helper: str) -> None:
    """``helper`` (04's wrapper gives 03's class as "CausalAttention (assignment 03)") among those the check's
    diagnoses judged: a release keeps what stand-ins for them answer (grader.grading.rehearsals)."""
    getattr(grade, "helpers_judged", set()).add(helper.split(" (", 1)[0])


def unseen_helper(grade, failure: CheckFailed, helper: str) -> Exception | None:
    """Where the student side cannot make the call of ``helper`` a blame would judge (its arguments are the
    lesson's, not on record: a case too large for a release to keep its diagnosis), the run with a right
    ``helper`` decides, as it decides for the instructor: the case is kept only if that run passes, which it
    does only where the helper's result was wrong. None without a stand-in, or under the cascade policy
    "every" (the failure stands)."""
    if not has_stand_in(helper) or grade.cascades != "once":
        return None
    detail = "its gradients are wrong on this case's inputs" if isinstance(failure, GradientFailure) else \
        "it gives a wrong result on this case's inputs"
    return stand_in_decides(grade, failure, helper, detail)


GROWTH = 8  # how much larger than the right result a student's may be for the grader to compute with it


def within(theirs, right) -> bool:
    """Whether the student's ``theirs`` may stand in for ``right`` in the grader's own computation: a
    tensor of at most one more dimension that, broadcast against ``right``, is at most GROWTH times its
    size (a helper that keeps an extra batch dimension is still judged). A shape of the student's choosing
    never sizes what the grader computes: [100000, 1, 1, 1, 1] for a [T, T] mask would be broadcast to
    gigabytes."""
    import math

    import torch

    if not isinstance(theirs, torch.Tensor) or not isinstance(right, torch.Tensor) or theirs.dim() > right.dim() + 1:
        return False
    try:
        shape = torch.broadcast_shapes(theirs.shape, right.shape)
    except RuntimeError:  # sizes in another order (heads split without a transpose)
        shape = theirs.shape
    return math.prod(shape) <= GROWTH * max(right.numel(), 1)


def _right(grade, theirs, right) -> bool:
    return theirs.dtype == right.dtype and matches(grade, theirs, right)


def wrong_elsewhere(grade, failure: CheckFailed, helper: str, chain: tuple | None, also: tuple = ()):
    """The helper right on the grader's model of its call (``chain``: the exercise's inputs and how they
    become the helper's arguments, see :func:`blame`), but not on the same values as a batch of one (a leading
    dimension of 1) or, batched, on the first of the batch, or on a call in ``also``: calls its contract
    allows ([..., T, d]; a mask that hides nothing) and an exercise may make instead (a batch flattened to three
    dimensions, a loop over the samples, an explicit empty mask; session 18's hunt for false alarms:
    simple_self_attention lost 10.48 of 20 beside an attention_scores written ``x @ x.T``, SelfAttention_v2 all
    15 beside an inverted mask). Wrong there, the check is run again with a right helper, which alone decides
    (as :func:`_unexplained`); None otherwise, or where no such run can be had (no stand-in, a student
    distribution: no reference)."""
    import torch

    if not has_stand_in(helper) or grade.cascades != "once" or grade.replaying:
        return None
    variants = [(where, args, kwargs) for where, args, kwargs in also]
    if chain:
        inputs, before, _, kwargs, *_ = chain
        with torch.no_grad():
            args = before(*[x.detach() for x in inputs])
        args = args if isinstance(args, tuple) else (args,)
        # (not where a dimension is counted from the front: a leading dimension would change what it means)
        if args and all(isinstance(a, torch.Tensor) and a.dim() >= 2 for a in args) and not any(
                isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in kwargs.values()):
            variants.append(("as a batch of one", tuple(a.unsqueeze(0) for a in args), kwargs))
            if all(a.dim() >= 3 and a.shape[0] == args[0].shape[0] for a in args):
                variants.append(("on the first of the batch alone", tuple(a[0] for a in args), kwargs))
    for where, values, kwargs in variants:
        try:
            with torch.no_grad():
                right = getattr(grade.ref, helper)(*_to(values, grade.device),
                                                   **dict(zip(kwargs, _to(kwargs.values(), grade.device))))
        except Exception:  # noqa: BLE001 - not a call the right helper makes either: nothing to judge it by
            continue
        theirs = their(grade, helper, *values, **kwargs)
        if isinstance(theirs, Raised):
            detail = f"it raises {theirs.exception} on this case's inputs {where}, {_described(values[0])}"
        elif not isinstance(theirs, torch.Tensor):
            continue  # it could not be had: nothing shows it wrong
        elif theirs.shape != right.shape:
            detail = f"it returns {_described(theirs)}, not {_described(right)}, on this case's inputs {where}"
        elif not _right(grade, theirs, right.to(theirs.device)):
            detail = f"it gives a wrong result on this case's inputs {where}"
        else:
            continue
        return stand_in_decides(grade, failure, helper, detail)
    return None


def _blame_raised(grade, failure: RaisedFailure, helper: str, theirs, right, composed: Callable,
                  helper_mistakes: Iterable[Candidate], chain: tuple | None = None,
                  also: tuple = ()) -> Exception | None:
    """The helper at fault for the student's code raising. With a stand-in for the helper
    (grader.grading.stand_ins), whenever the helper is wrong on this case's inputs (it raises, or
    returns another result): the check is then run again with a right helper, which alone decides.
    Without one, when it raises the same way itself (the same exception, the same message), or when the
    right computation raises the same way on the helper's wrong result. What the grader saw decides,
    never the traceback's text: the student's process writes that, frames and file names included (a
    message can hold a fake frame)."""
    import torch

    verified = has_stand_in(helper)  # by the run with the stand-in: every blame below is provisional
    kind, said = failure.fault.exception, last_line(failure.fault.message)
    if isinstance(theirs, Raised):  # (``right`` and ``composed`` are not needed then)
        if verified:
            return helper_at_fault(grade, failure, helper, f"it raises {theirs.exception} on this case's inputs",
                                   provisional=True)
        if theirs.exception != kind or last_line(theirs.message) != said:
            return None
        return helper_at_fault(grade, failure, helper, f"it raises {kind} on this case's inputs", raised=True)
    if not isinstance(theirs, torch.Tensor) or not isinstance(right, torch.Tensor):
        return None
    if not within(theirs, right) or (verified and theirs.shape != right.shape):  # (the stand-in decides)
        if not verified:
            return None
        named = first_match(grade, theirs, helper_mistakes, right)  # (K Qᵀ where Tq and Tk differ: a shape's own)
        misconception, detail = named or (None, f"it returns {_described(theirs)}, not {_described(right)}, on this "
                                                "case's inputs")
        return helper_at_fault(grade, failure, helper, detail, misconception, provisional=True)
    if _right(grade, theirs, right):
        return wrong_elsewhere(grade, failure, helper, chain, also) if verified else None
    if not verified:
        with torch.no_grad():
            try:
                composed(theirs.to(right.device))
            except Exception as exc:  # noqa: BLE001 - the right computation fails on the helper's result
                if type(exc).__name__ != kind:
                    return None
            else:
                return None
    # the helper returned a wrong result; without a stand-in, the right computation given it raises the
    # exercise's exception type (its message may differ: a right exercise may fail in masked_fill where
    # the lesson's formula fails in torch.where); the helper's own exercise is charged for the wrong result
    if theirs.dtype != right.dtype:
        return helper_at_fault(grade, failure, helper, f"it returns {str(theirs.dtype).replace('torch.', '')}, not "
                               f"{str(right.dtype).replace('torch.', '')}", "wrong-dtype", provisional=verified)
    found = first_match(grade, theirs, helper_mistakes, right)
    misconception, detail = found if found else (None, "it gives a wrong result on this case's inputs")
    return helper_at_fault(grade, failure, helper, detail, misconception, provisional=verified)


def device_ignored(grade, failure, helper: str, theirs: Callable, exercise: str, args: tuple,
                   right: Callable) -> Exception | None:
    """On a GPU: a raise of ``exercise(*args)`` blamed on the student's ``helper``, when the helper's
    result on this case's inputs (``theirs()``, its call on the grading device) was left on the CPU, and
    the student's exercise run on the same inputs kept on the CPU, where that result fits, gives
    ``right()`` (the right output, computed on the CPU). The grader checks that output itself: the
    raise's text decides nothing. None on the CPU, for another failure, or when either does not hold."""
    import torch

    from grader.inside.protocol import sent_from

    if grade.device == "cpu" or not isinstance(failure, RaisedFailure):
        return None
    theirs = theirs()
    if not isinstance(theirs, torch.Tensor) or sent_from(theirs).split(":")[0] != "cpu":
        return None
    again = their(grade, exercise, *args, on_cpu=True)
    if not isinstance(again, torch.Tensor) or not matches(grade, again, right()):
        return None
    return helper_at_fault(grade, failure, helper, f"it leaves its result on the CPU, not on the {grade.device} "
                           "device of its inputs or its device argument", "wrong-device")


def _described(tensor) -> str:
    return f"{shape_str(tensor.shape)} {str(tensor.dtype).replace('torch.', '')}"



def _blame_gradients(grade, failure: GradientFailure, helper: str, chain: tuple) -> Exception | None:
    """The helper at fault for a right output's wrong gradients when the exercise's gradients are those
    of the right computation through the student's own helper (both failing to compute them, or both
    the same, NaN included), and the helper's differ from the right ones."""
    inputs, before, after, kwargs, *formula = chain
    try:
        theirs, their_error = composed_gradients(grade, helper, inputs, before, after, kwargs, failure.grad_out,
                                                 student=True)
        right, _ = composed_gradients(grade, helper, inputs, before, after, kwargs, failure.grad_out, student=False,
                                      right_helper=formula[0] if formula else None)
    except NotReplayable:  # a student distribution: the run with a right helper decides, as it does for the instructor
        return unseen_helper(grade, failure, helper)
    got = failure.reply
    if their_error or got.grad_error:
        if not (their_error and got.grad_error):
            return None
        detail = "computing gradients through it fails on this case's inputs"
    else:
        ours = [got.grads[i] if got.grads and i < len(got.grads) else None for i in range(len(theirs))]
        if any((a is None) != (b is None) or (a is not None and not matches(grade, a, b)) for a, b in zip(ours, theirs)):
            return None
        if all(a is None or matches(grade, a, b) for a, b in zip(theirs, right)):
            return None  # the helper gives right gradients: this exercise's gradients are its own
        detail = "its gradients are wrong on this case's inputs"
    return helper_at_fault(grade, failure, helper, detail)


def composed_gradients(grade, helper: str, inputs, before: Callable, after: Callable, kwargs: dict, grad_out,
                       student: bool, right_helper: Callable | None = None):
    """The gradients, with respect to ``inputs`` (the exercise's tensor arguments, in order; None for one
    not floating-point), of ``after(helper(*before(*inputs)), *inputs)`` sent ``grad_out``: ``before``
    and ``after`` differentiated here, the helper the student's own (run in their worker on detached
    arguments and sent the gradient of its result) or, with ``student=False``, the reference's (in a replay,
    which has none, ``right_helper``: the lesson's formula for it, where the suite gives one).
    ``(grads, None)``, or ``(None, error)`` when the student's helper fails to compute its gradients."""
    import torch

    right = None  # the right helper: the lesson's formula in a replay, where given; else the reference's
    if not student:
        right = right_helper if right_helper is not None and grade.replaying else getattr(grade.ref, helper)
    leaves = [x.detach().clone().requires_grad_(x.is_floating_point()) for x in inputs]
    live = [x for x in leaves if x.requires_grad]
    with torch.enable_grad():
        args = before(*leaves)
        args = args if isinstance(args, tuple) else (args,)
        detached = [a.detach() if isinstance(a, torch.Tensor) else a for a in args]
        if student:
            h = grade.call(helper, *detached, **kwargs).out
        else:
            h = right(*_to(detached, grade.device), **kwargs).detach().cpu()
        h = h.detach().to(args[0].dtype).requires_grad_()
        out = after(h, *leaves)
        if grade.replaying and not getattr(out, "requires_grad", False):  # the lesson's computation, answered from
            raise NotReplayable("the exercise's right computation is on record without its gradients")  # the record
        upstream, *direct = torch.autograd.grad(out, [h, *live], grad_out.to(out.dtype), allow_unused=True)
    tensors = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]
    trainable = [i for i in tensors if args[i].requires_grad]
    back = [None] * len(live)
    if upstream is not None and trainable:
        if student:
            try:  # on arguments that require gradients (an in-place change of one may raise at once)
                reply = grade.call(helper, *detached, grad_out=upstream,
                                   grad_args=[tensors.index(i) for i in trainable], **kwargs)
            except StudentFault as fault:
                return None, fault.message
            except CheckFailed as failure:  # a crash that names a mistake (an input changed in place)
                if failure.fault is None:
                    raise
                return None, failure.fault.message
            if reply.grad_error:
                return None, reply.grad_error
            helper_grads = [reply.grads[tensors.index(i)] if reply.grads else None for i in trainable]
        else:
            moved = [a.requires_grad_(i in trainable) if isinstance(a, torch.Tensor) else a
                     for i, a in enumerate(_to(detached, grade.device))]
            with torch.enable_grad():
                result = right(*moved, **kwargs)
                helper_grads = torch.autograd.grad(result, [moved[i] for i in trainable],
                                                   upstream.to(result.device, result.dtype), allow_unused=True)
        present = [(args[i], g.cpu()) for i, g in zip(trainable, helper_grads) if g is not None]
        if present:
            with torch.enable_grad():
                back = torch.autograd.grad([a for a, _ in present], live, [g.to(a.dtype) for a, g in present],
                                           allow_unused=True)
    summed = iter(d if b is None else (b if d is None else d + b) for d, b in zip(direct, back))
    return [next(summed) if x.requires_grad else None for x in leaves], None


def _to(values, device):
    import torch

    return [v.to(device) if isinstance(v, torch.Tensor) else v for v in values]


def helper_at_fault(grade, failure: CheckFailed, helper: str, detail: str, misconception: str | None = None,
                    raised: bool = False, provisional: bool = False):
    """What a case right but for the student's own ``helper`` gives, by the course's cascade policy:
    under "once" a pass that names the helper (its mistake is charged in its own exercise), under
    "every" a failure naming it. ``provisional``: only the helper's stand-in can confirm it (the check
    run again with a right helper, grader.grading.stand_ins); without that run, ``failure`` stands."""
    _judged(grade, helper)
    if grade.cascades == "once":
        kept = RightGivenHelper(f"right, given your {helper}, which this uses; but your {helper} is wrong "
                                f"({detail}): fix the {helper} exercise", raised=raised, helper=helper,
                                unverified=failure if provisional else None)
        kept.named = misconception or ""
        return kept
    return CheckFailed(f"{failure.message}; the mistake is in your {helper}, which this uses: {detail}. "
                       f"Fix the {helper} exercise first", (misconception,) if misconception else ())
