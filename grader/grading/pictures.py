"""Feedback you can see: a wrong exercise's output drawn beside the right one, on the lesson's data.

An exercise the course *pictures* (course.toml's ``[course] figures`` names a module of the course, beside
its suites, whose ``FIGURES`` maps ``(assignment, exercise)`` to a :class:`Picture`; this course's is
suites/lesson/figures.py) is drawn when it fails: after grading, the student's function runs once more
in its worker (the same sandbox and requests as every graded call) on its *picture cases*, calls on
the lesson's own data, never a hidden case, tried in order until one shows the output wrong (the plain
call first, then, say, the lesson's data with a mask, so that a mistake that shows only once something
is hidden is drawn where it shows). A class's case builds it with weights under which its output shows
what is to be seen, and calls it in evaluation mode. The right output comes from the reference where it
is present, else from the public recording (``grade release --out`` records every picture case beside
the public suites' uses, under ``picture:<assignment>:<exercise>``, the later cases numbered
``...:<exercise>:1``). Where the two differ beyond the float32 tolerance, the exercise's result carries a
small figure (``ExerciseResult.figure``, at most 16 x 16 entries, numbers rounded, NaN and infinities as
strings): a notebook's ``check()`` shows it, ``grade check --figures DIR`` writes it as PNG files, and the
class report draws one per misconception (grader/reporting/figures.py draws them). A right answer on every case, a call that raises or times out,
an output of another shape, or a class whose parameters are not the contract's draws nothing. Grading
that finds nothing wrong does no extra work.
"""
from __future__ import annotations

import importlib.util
import math
from dataclasses import dataclass
from typing import Callable

from grader.results import FIGURE_LIMIT as LIMIT

DIGITS = 4  # decimals kept of each number
PICTURED_STATUSES = ("failed", "error")  # a wrong output, or a raise on some other case


@dataclass(frozen=True)
class Picture:
    """One picture case of a pictured exercise: its call on the lesson's data, and how its output is drawn.
    ``also``: further cases, tried in order where the student's output is right on this one (the lesson's
    data with its mask, where the code is wrong only once something is hidden). A class's case
    (``module``) builds the class with these constructor arguments, loads ``weights`` by parameter name,
    and calls ``forward(*inputs)`` in evaluation mode."""

    title: str  # the call, as the student reads it: the lesson notebook's own names
    inputs: Callable  # () -> the call's positional arguments
    rows: Callable  # () -> row labels
    cols: Callable  # () -> column labels
    kind: str = "weights"  # weights, scores, mask or values: how it is coloured
    view: Callable = None  # the output -> the 2-D matrix drawn (None: the output itself)
    kwargs: Callable = None  # () -> the call's keyword arguments (None: none)
    module: tuple = None  # a class's case: (constructor args, constructor kwargs)
    weights: Callable = None  # () -> {parameter name: tensor}, every parameter of the class
    also: tuple = ()  # the cases tried next, in order, while this one shows nothing wrong

    def each(self):
        """This case, then those tried after it."""
        yield self
        for case in self.also:
            yield from case.each()


def course_pictures(course) -> dict:
    """The course's pictured exercises, ``{(assignment, exercise): Picture}``: ``FIGURES`` of the file
    ``[course] figures`` names (a module beside the course's suites, imported with the suites' folder on
    the path, as pytest.ini's ``pythonpath`` lets the suites import their helpers); {} for a course
    without figures. Loaded once per file."""
    if not course.figures_file:
        return {}
    path = (course.layout.root / course.figures_file).resolve()
    if path not in _LOADED:
        import sys

        suites = str(course.layout.suites)
        added = suites not in sys.path
        if added:
            sys.path.insert(0, suites)
        try:
            spec = importlib.util.spec_from_file_location(f"grader_course_figures_{len(_LOADED)}", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        finally:
            if added:
                sys.path.remove(suites)
        _LOADED[path] = dict(module.FIGURES)
    return _LOADED[path]


_LOADED: dict = {}


# --- the picture case, after grading ---------------------------------------------------------------
def pictures(session, outcomes, assignments, only=None) -> dict[tuple[str, str], dict]:
    """``{(assignment, exercise): figure}`` for the pictured exercises that ``outcomes`` (the plugin's
    ``(assignment, exercise, CheckOutcome)``) show wrong, each drawn on its first picture case where the
    student's output is wrong (a mask the code gets wrong, where it is right without one); while the
    public suites are being recorded (``grade release --out``), the right output of every picture case
    is recorded too. Student code runs in its worker, through the session's own requests; nothing here
    costs a grade."""
    session.leave_apart()  # drawn by the assignment's own workers, not an apart check's
    recording = session.recording
    recording_now = recording is not None and not recording.replaying
    wrong = {(a, e) for a, e, check in outcomes
             if check.status in PICTURED_STATUSES or (check.status == "passed" and check.forgiven_by)}
    found = {}
    for assignment in assignments:
        for (aid, exercise), first in course_pictures(session.course).items():
            if aid != assignment.id or (only is not None and exercise not in only):
                continue
            draw = (aid, exercise) in wrong
            if not draw and not recording_now:
                continue
            for number, case in enumerate(first.each()):
                try:
                    figure = _picture(session, aid, exercise, case, draw=draw, key=_key(aid, exercise, number))
                except Exception:  # noqa: BLE001 - a figure is a courtesy: it never costs a grade
                    if session.debug:
                        raise
                    figure = None
                if figure is not None:
                    found[(aid, exercise)] = figure
                    if not recording_now:
                        break
    return found


def _key(aid: str, exercise: str, number: int) -> str:
    """A picture case's name in the public recording: the first case's as it always was, the others numbered."""
    return f"picture:{aid}:{exercise}" + (f":{number}" if number else "")


def _picture(session, aid, exercise, case, *, draw, key) -> dict | None:
    import torch

    from grader.grading.outcomes import GraderFault, StudentFault
    from grader.grading.recorded_outputs import NotReplayable, _on_cpu

    from grader.grading.models import keeping

    with keeping(session.recording.models if session.recording else None):  # the lesson's data, on record
        try:
            args = case.inputs()
            kwargs = case.kwargs() if case.kwargs else {}
            weights = case.weights() if case.module else None
        except NotReplayable:
            return None

    def compute():
        target = getattr(session.references[aid], exercise)
        with torch.no_grad():
            if case.module:
                with torch.random.fork_rng(devices=[]):  # its random initial weights, all replaced below
                    instance = target(*case.module[0], **case.module[1])
                for name, parameter in instance.named_parameters():
                    parameter.copy_(weights[name])
                target = instance.train(False)
            return _on_cpu(target(*args, **kwargs), copy=True)

    try:
        right = session.recording.event(key, compute) if session.recording else compute()
    except (NotReplayable, KeyError, AttributeError):  # an older recording, or no reference at hand
        return None
    if not draw:
        return None
    try:
        theirs = _their_output(session.student(aid), exercise, case, args, kwargs, weights)
    except (StudentFault, GraderFault):
        return None
    if theirs is None:
        return None
    tolerance = session.course.tolerance("float32")
    return figure_of(case, theirs, right, rtol=tolerance.rtol, atol=tolerance.atol)


def _their_output(student, exercise, case, args, kwargs, weights):
    """The student's output on the picture case, from its worker: a function's call, or (a class) an
    instance holding the case's weights, in evaluation mode, called once and let go. None where the
    instance's parameters are not the contract's (names, shapes): its checks say so in words."""
    from grader.grading.fixture import reply_of
    from grader.inside.protocol import HandleRef

    if not case.module:
        reply = student.request({"op": "call", "target": exercise, "args": args, "kwargs": kwargs,
                                 "grad_enabled": False})
        return reply_of(reply).out
    made = student.request({"op": "new", "name": exercise, "args": case.module[0], "kwargs": case.module[1],
                            "dtype": None, "state": True, "training": False, "params": weights})
    handle = made.get("handle")
    if not isinstance(handle, int):
        return None
    try:
        params = made.get("params") if isinstance(made.get("params"), dict) else {}
        shapes = {name: tuple(getattr(value, "shape", ())) for name, value in params.items()}
        if made.get("loaded") is not True or shapes != {name: tuple(w.shape) for name, w in weights.items()}:
            return None
        reply = student.request({"op": "call", "target": HandleRef(handle), "args": args, "kwargs": kwargs,
                                 "name": exercise, "grad_enabled": False, "seed": 0})
        return reply_of(reply).out
    finally:
        student.request({"op": "drop", "handle": handle})


def figure_of(case: Picture, theirs, right, *, rtol: float, atol: float) -> dict | None:
    """The figure's data: the two matrices (cut to LIMIT x LIMIT), their labels and where they differ;
    None when the output is right, not a tensor, or not of the right one's shape."""
    import torch

    if not isinstance(theirs, torch.Tensor) or not isinstance(right, torch.Tensor) or theirs.shape != right.shape:
        return None
    try:
        view = case.view or (lambda out: out)
        mine, good = view(theirs.detach().cpu()), view(right.detach().cpu())
    except (IndexError, RuntimeError):
        return None
    if mine.dim() != 2 or mine.shape != good.shape:
        return None
    mine, good = mine.to(torch.float64), good.to(torch.float64)
    close = (mine - good).abs() <= atol + rtol * good.abs()
    same = close | (mine == good) | (mine.isnan() & good.isnan())  # == holds equal infinities
    if bool(same.all()):
        return None
    rows, cols = list(case.rows()), list(case.cols())
    n, m = min(mine.shape[0], LIMIT), min(mine.shape[1], LIMIT)
    return {"title": case.title, "kind": case.kind,
            "row_labels": [str(r) for r in rows[:n]], "col_labels": [str(c) for c in cols[:m]],
            "theirs": _cells(mine[:n, :m]), "right": _cells(good[:n, :m]),
            "differs": [[int(not v) for v in row] for row in same[:n, :m].tolist()]}


def _cells(matrix) -> list[list]:
    return [[number(v) for v in row] for row in matrix.tolist()]


def number(value: float):
    """A number JSON holds: rounded to DIGITS decimals, or "nan", "inf", "-inf"."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    rounded = round(value, DIGITS)
    return int(rounded) if rounded.is_integer() and abs(rounded) < 1e15 else rounded
