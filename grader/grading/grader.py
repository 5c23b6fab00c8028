"""One grading run: a submission against the suites of the chosen assignments (``Grader.grade``), or a
stream of them graded in one pytest session on one seed (``Grader.grade_each``, for autograde: the
suites are collected once and the reference's results kept between submissions).

Student code runs in workers forked by a zygote that this process starts fresh, in a sandbox that
grader.sandbox.submission_sandbox keeps, a cell per submission: no worker ever has the reference, the suites or the
grader's channels in its memory, whatever this process imported before.
"""
from __future__ import annotations

import contextlib
import dataclasses
import datetime
import importlib.util
import io
import os
import secrets
import sys
import threading
import time
from pathlib import Path

from grader.sandbox.confine import blocked_paths, confinement_for
from grader.config import Assignment, Course
from grader.errors import DeviceError, GraderError, SubmissionError
from grader.grading.charges import charged_to_helpers, wrong_calls
from grader.grading.pictures import pictures
from grader.grading.recorded_outputs import public_recording
from grader.grading.rules_read import kept_where_read
from grader.results import AssignmentResult, CheckOutcome, ExerciseResult, SubmissionResult
from grader.submission import Submission



def import_torch():
    """torch, imported without the garbage collector: its import makes hundreds of thousands of objects,
    none of them garbage, and a full collection among them costs tens of milliseconds each time one
    runs (during the import, and during every import after it). Frozen once loaded, they are never
    traversed again."""
    if "torch" in sys.modules:
        return sys.modules["torch"]
    import gc

    was_enabled = gc.isenabled()
    gc.disable()
    try:
        import torch
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()
    return torch


def pick_device(requested: str) -> str:
    """``auto`` takes CUDA when present; ``cuda`` without a GPU is a DeviceError."""
    os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")  # ask without initialising CUDA (fork-safe)
    torch = import_torch()

    available = torch.cuda.is_available()
    if requested == "cuda" and not available:
        raise DeviceError("--device cuda: no CUDA device is available on this machine (use --device cpu or auto)")
    if requested == "auto":
        return "cuda" if available else "cpu"
    return requested


def suite_files(course: Course, assignments: tuple[Assignment, ...], suite: str = "hidden") -> list[Path]:
    files = []
    for assignment in assignments:
        path = course.layout.suite(assignment, suite)
        if not path.is_file():
            raise GraderError(f"no grading suite for {assignment.id}: expected {path}")
        files.append(path)
    return files


def load_references(course: Course) -> dict:
    """The reference modules, imported under their own names (MultiHeadAttentionWrapper imports
    ``causal_attention``). Only ever called in the grading process, never in a worker."""
    modules = {}
    for assignment in course.assignments:
        folder = course.layout.solution_folder(assignment)
        if str(folder) not in sys.path:
            sys.path.append(str(folder))
    for assignment in course.assignments:
        path = course.layout.solution_module(assignment)
        name = assignment.module_name
        if name in sys.modules and getattr(sys.modules[name], "__file__", None) == str(path):
            modules[assignment.id] = sys.modules[name]
            continue
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        modules[assignment.id] = module
    return modules


# A grading session needs none of pytest's conveniences for people, and some cost much: the
# unraisable-exception plugin runs gc.collect() repeatedly, and third-party plugins load on start.
PYTEST_ARGS = ("-q", "-s", "--no-header", "-p", "no:cacheprovider", "-p", "no:unraisableexception",
               "-p", "no:threadexception", "-p", "no:logging", "-p", "no:warnings", "-p", "no:faulthandler",
               "-p", "no:doctest", "-p", "no:junitxml", "-p", "no:pastebin", "-p", "no:nose", "-p", "no:legacypath",
               "--assert=plain")  # suites fail by CheckFailed; an assert in one is a suite bug (grade check --debug)


@contextlib.contextmanager
def _no_autoload():
    """The grading's own pytest, whatever the environment asks of pytest: no plugin loaded by itself, and none
    of PYTEST_ADDOPTS (a CI job's ``--junitxml`` or ``--durations`` named a plugin the grading leaves out, and
    every submission's grading stopped with pytest's usage error)."""
    names = ("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "PYTEST_ADDOPTS")
    saved = {name: os.environ.get(name) for name in names}
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    os.environ.pop("PYTEST_ADDOPTS", None)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


class _OnlyExercises:
    """Keeps the checks of the named exercises only (a notebook's test cell grades one exercise)."""

    def __init__(self, names):
        self.names = frozenset(names)

    def pytest_collection_modifyitems(self, items):
        items[:] = [i for i in items if (m := i.get_closest_marker("exercise")) and m.args[0] in self.names]


def _pytest(course: Course, files: list[Path], plugins: list, *, debug: bool = False) -> int:
    """Run the suites ``files`` under pytest with ``plugins``; pytest's exit code. Quietly, or with
    ``debug`` its output on stderr (stdout may carry a report)."""
    import pytest

    out, err = (sys.stderr, sys.stderr) if debug else (io.StringIO(), io.StringIO())
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), _no_autoload():
        return pytest.main([*map(str, files), *PYTEST_ARGS, "--rootdir", str(course.layout.suites),
                            "-c", str(course.layout.pytest_ini)], plugins=plugins)


def _raise_problems(problems: list[str]) -> None:
    """A suite that cannot count its checks stops the grading, loudly (see session.suite_problems)."""
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise GraderError(f"the grading suite is broken: {problems[0]}{more}")


@dataclasses.dataclass
class _Run:
    """One submission's grading: what :meth:`Grader._begin` set up, for the checks and the result."""

    assignments: tuple
    exercises: tuple[str, ...] | None
    started: float = 0.0
    started_at: str = ""
    seed: int = 0
    fixed_cases: bool = False  # replayed from a recording: the public cases, whatever the seed asked
    files: list = dataclasses.field(default_factory=list)
    submission: Submission | None = None
    cell: object = None  # grader.sandbox.submission_sandbox.Cell
    session: object = None
    plugin: object = None


class Grader:
    """Grades submissions one after another, sharing one zygote (restarted if it dies)."""

    def __init__(self, course: Course, *, device: str = "auto", confinement=None, debug: bool | None = None,
                 batch: bool = False, relative_paths: bool = False, twins: bool = False):
        """``confinement``: how to run student code, as :func:`grader.sandbox.confine.confinement_for` plans
        it; by default planned here, for the course's secrets alone. ``debug`` (by default: whether
        ``GRADE_DEBUG=1``): for suite authors, a check that breaks shows its traceback in the feedback
        and pytest's output goes to stderr. ``batch``: many submissions, or many gradings, will follow
        (its zygote's memory in huge pages: each fork costs less, at about 0.1 s once). ``twins``: a submission's
        assignments may be graded by two processes at once where the machine has a processor for each
        (grader.grading.twins: `grade check`)."""
        self.course = course
        self.twins = twins
        self._current: _Run | None = None  # the submission being graded (cancel)
        self._cancelled = None  # the submission cancel() was asked for before its session began
        self._lock = threading.Lock()
        self.debug = os.environ.get("GRADE_DEBUG") == "1" if debug is None else debug
        self.references = None
        self.memo = None  # the reference's results, for the next submission on the same cases
        self.submissions = 0
        from grader.sandbox.submission_sandbox import Sandbox

        # its zygote imports torch while this process does the same
        self.sandbox = Sandbox(course, confinement or confinement_for(course), batch=batch,
                               relative_paths=relative_paths)
        try:
            self.device = pick_device(device)
        except BaseException:
            self.close()
            raise
        import torch

        torch.set_num_threads(1)  # grading works on small tensors: more threads only spin against the worker

    @property
    def zygote(self):
        return self.sandbox.zygote

    @property
    def confinement(self):
        """How student code runs: as planned, or the weaker mode the zygote's probe led to."""
        return self.sandbox.confinement

    def grade(self, submission: Submission, assignments: tuple[Assignment, ...], *,
              seed: int | None = None, recording=None, exercises: tuple[str, ...] | None = None,
              suite: str = "hidden", memo: bool = False) -> SubmissionResult:
        """Grade ``submission`` on ``assignments``. With a ``recording`` (recorded_outputs.py), the reference's
        outputs are recorded into it, or, when it is being replayed, taken from it (no reference needed).
        ``suite``: the folder of suites/ to run; a course without solutions/ (a student distribution)
        always runs the public suites from their recording. ``memo``: the reference's results are kept for
        later gradings on the same cases, as in :meth:`grade_each`."""
        run = self._begin(submission, assignments, seed, recording, exercises, suite, memo=memo)
        plugins = [run.plugin] if exercises is None else [run.plugin, _OnlyExercises(exercises)]
        try:
            code = _pytest(self.course, run.files, plugins, debug=self.debug)
            figures = self._figures(run)
        finally:
            self._end(run)
        _raise_problems(run.plugin.problems)
        return self._result(run, code, figures)

    def grade_each(self, jobs, assignments: tuple[Assignment, ...], *, seed: int, prepare, report,
                   assignments_of=None, exercises_of=None) -> None:
        """Grade each of ``jobs`` (an iterator) on ``assignments`` with one seed, in one pytest session:
        the suites are collected once, and each submission runs every check. ``prepare(job)`` gives
        the job's Submission (a GraderError: the job cannot be graded); ``report(job, result)`` gets its
        SubmissionResult, or the GraderError. ``assignments_of(job)``: those of ``assignments`` this job
        is graded on (by default all; --watch grades what a save changed); ``exercises_of(job)``: the names of
        the only exercises it is graded on (by default, or None, all of them; a notebook's check() grades one)."""
        from grader.grading.pytest_session import GradingStream

        def start(job):
            chosen = assignments if assignments_of is None else assignments_of(job)
            only = None if exercises_of is None else exercises_of(job)
            only = None if only is None else tuple(only)  # (None for a job: all of them)
            return self._begin(prepare(job), chosen, seed, None, only, "hidden", memo=True)

        def finish(run):
            figures = self._figures(run)
            self._end(run)
            return self._result(run, 0, figures)

        stream = GradingStream(self.course, {a.id for a in assignments}, jobs, start=start, finish=finish,
                               report=report, end=self._end, lean=not self.debug)  # debug: pytest's own output
        probe = self._begin(None, assignments, seed, None, None, "hidden")  # the files only
        code = _pytest(self.course, probe.files, [stream], debug=self.debug)
        _raise_problems(stream.problems)
        if stream.error is not None:
            raise stream.error
        if code not in (0, 1, 5):  # 5: nothing collected (no submission came)
            raise GraderError(f"the grading suites could not run (pytest exit code {int(code)})")

    def _begin(self, submission, assignments, seed, recording, exercises, suite, *, memo=False) -> "_Run":
        """Everything one submission's grading needs before its checks run (``submission`` None: the
        suite files only, for a session that will grade several). With ``memo``, the reference's results
        are kept for later submissions graded on the same seed (grader/grading/reference_cache.py)."""
        from grader.grading.pytest_session import GradingPlugin, GradingSession

        run = _Run(assignments=assignments, exercises=exercises)
        run.started = time.monotonic()
        run.started_at = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        if recording is None and not self.course.layout.has_reference():
            recording, suite = public_recording(self.course, self.device), "public"
        replaying = recording is not None and recording.replaying
        if replaying:
            seed = recording.seed  # the recorded outputs belong to the inputs of this seed
        run.seed = secrets.randbelow(10**6) if seed is None else seed
        run.fixed_cases = replaying
        run.files = suite_files(self.course, assignments, suite)
        if submission is None:
            return run
        if self.references is None and not replaying:
            self.references = load_references(self.course)
        if memo and self.memo is None:
            from grader.grading.reference_cache import ReferenceMemo

            self.memo = ReferenceMemo()
        self.submissions += 1
        run.submission = submission
        run.cell = self.sandbox.cell(submission)
        try:  # reads the student's files (the module and a notebook beside it)
            run.session = GradingSession(
                self.course, assignments, run.cell.copy, self.zygote, seed=run.seed, device=self.device,
                references=self.references or {}, recording=recording, uid=run.cell.uid, cgroups=run.cell.cgroups,
                blocked=blocked_paths(self.course), memo=self.memo if memo else None, debug=self.debug)
        except (RecursionError, MemoryError):  # every walk over student text is iterative; this is the backstop
            run.cell.close()
            raise SubmissionError(f"{submission.name}: the grader cannot read this submission's code (nested "
                                  "too deeply)") from None
        run.plugin = GradingPlugin(run.session)
        if self._twins_allowed(run, recording):
            run.plugin.twins = lambda outcomes, ids: pictures(
                run.session, outcomes, tuple(a for a in run.assignments if a.id in ids), run.exercises)
        with self._lock:
            self._current = run
            if self._cancelled is submission:
                run.session.cancel()
        return run

    def _twins_allowed(self, run: "_Run", recording) -> bool:
        """Whether ``run``'s checks may be graded by two processes (grader.grading.twins: where they make two units
        or more, several assignments or one with checks marked apart): where this grader was made for it, on the CPU
        (a CUDA context is a process's), not for a suite author (--debug), not while the public suites are recorded,
        and with a processor for each."""
        from grader.grading.twins import wanted

        recording_now = recording is not None and not recording.replaying
        return (self.twins and self.device == "cpu" and not self.debug
                and not recording_now and wanted())

    def cancel(self, submission: Submission) -> None:
        """From another thread: the grading of ``submission``, if it is the one under way or about to begin, is
        cut short: no check of it starts after this (each ends at once as a timeout) and its workers are hung up
        on (the request in flight ends too); its processes end with it, as ever. Nothing for any other."""
        with self._lock:
            if self._current is not None and self._current.submission is submission:
                self._current.session.cancel()
            else:
                self._cancelled = submission

    def _end(self, run: "_Run") -> None:
        """End every process of the submission and remove its cgroup and working copy."""
        with self._lock:
            if self._current is run:
                self._current = None
            if self._cancelled is run.submission:
                self._cancelled = None
        try:
            gone = run.session.close()  # False: something of the submission may be left
            twin = run.plugin.twin if run.plugin is not None else None
            gone = gone and (twin is None or twin["gone"])  # the second process's twin zygote saw its own gone
        except BaseException:
            self.sandbox.end(run.cell, gone=False)
            raise
        self.sandbox.end(run.cell, gone=gone)

    def _figures(self, run: "_Run") -> dict:
        """The pictured exercises that came out wrong, each drawn beside the right output on the lesson's
        data (grader/grading/pictures.py: one more call of the student's, in its worker, while it still runs);
        no work at all when none did."""
        twin = run.plugin.twin or {"assignments": (), "figures": {}}  # drawn by the process that graded them
        mine = tuple(a for a in run.assignments if a.id not in twin["assignments"])
        return {**pictures(run.session, run.plugin.outcomes, mine, run.exercises), **twin["figures"]}

    def _result(self, run: "_Run", code, figures=None) -> SubmissionResult:
        if code not in (0, 1):
            raise GraderError(f"the grading suites could not run (pytest exit code {int(code)})")
        results = charged_to_helpers(charged_across(
            [self._assignment_result(a, run.plugin.outcomes, run.exercises, run.session) for a in run.assignments],
            {name: a.id for a in self.course.assignments for name in a.exercises}))
        for assignment in results:  # a figure for what is wrong once every mistake is charged (charged_once)
            for exercise in assignment.exercises:
                if exercise.status != "passed":
                    exercise.figure = (figures or {}).get((assignment.id, exercise.name))
        return SubmissionResult(run.submission.name, run.seed, self.device, time.monotonic() - run.started, results,
                                isolation=self.confinement.mode, started=run.started_at, fixed_cases=run.fixed_cases)

    def _assignment_result(self, assignment: Assignment, outcomes, only, session) -> AssignmentResult:
        exercises = []
        for name, points in assignment.points:
            if only is not None and name not in only:
                continue
            checks = [c for a, e, c in outcomes if a == assignment.id and e == name]
            if not checks:
                checks = [CheckOutcome("suite", 1.0, "error", "the grading suite has no check for this exercise")]
            source, note = session.source_of(assignment.id, name)
            exercises.append(ExerciseResult(name, points, checks, source=source, source_note=note,
                                            known=self.course.catalogue))
        return AssignmentResult(assignment.id, assignment.title, charged_once(kept_where_read(exercises)))

    def close(self):
        self.sandbox.close()


def charged_once(exercises: list) -> list:
    """Forgiveness never hides a mistake: a case kept as right given the student's own helper stays
    kept only if that helper's exercise, graded here, lost points for it; a helper that passes all of
    its own checks leaves the case to the exercise that made it. Where the helper's call on that case
    has plain arguments (``forgiven_call``), the helper's own exercise must have graded that very call
    and found it wrong: a call outside what its exercise checks is the caller's."""
    passed = {e.name for e in exercises if e.status == "passed"}  # kept right given helpers of their own or not
    kept = _kept_given(exercises)
    wrong = wrong_calls(exercises)  # the plain calls each exercise's own checks graded and found wrong
    for exercise in exercises:
        for index, check in enumerate(exercise.checks):
            helper = check.forgiven_by
            if helper in passed:  # (lost nothing: a check of its own kept right given a helper of its own charges
                # the mistake that helper explains, not this one; red team rounds 27a and 27c, unnamed and named)
                why = f"your {helper} passes all of its own checks"
            elif helper and check.forgiven_call and helper in wrong and check.forgiven_call not in wrong[helper]:
                why = f"your {helper} is wrong on {check.forgiven_call}, a call its own exercise does not grade"
            else:
                continue
            # kept given another helper too, which lost points (or is another assignment's: charged_across decides)
            exercise.checks[index] = _given_another(check, lambda h: h not in wrong or h not in passed, kept) or \
                _the_exercises_own(check, why)
    named = {e.name for e in exercises if e.misconceptions}  # helpers whose mistake the feedback names
    for exercise in exercises:
        _bound_raised_helpers(exercise, named)
    return exercises


def charged_across(assignments: list, assignment_of: dict | None = None) -> list:
    """:func:`charged_once` across the assignments graded together: a case kept as right given the student's
    helper of an earlier assignment (04's wrapper given 03's CausalAttention) holds only where that mistake is
    charged in the helper's own exercise, graded here (the contract: "that mistake is then charged in the helper's
    exercise"). It fails where the helper passed all of its own checks (red team round 26: a 03 class right on its
    own checks and wrong only as the wrapper builds it), where the blame named the helper's mistake and its own
    exercise did not name it (round 26e: a class wrong only in a process that had run none of 03's code, with one
    cheap unrelated slip so that it was not clean), and where the helper's assignment is not graded here (round
    26e: the same class week by week, 03 graded clean and 04 kept given it): a mistake no run charges costs the
    exercise that shows it; a check of the helper's own kept only as right given a helper of its own charges that
    helper's mistake, not this one (round 27a: a causal_mask slip at one size, which a 03 class's own check was kept
    given, made the class "not clean" beside a slip of its own). ``assignment_of``: each
    exercise's assignment in the course (a helper of the same assignment, graded or not in this run, is
    charged_once's)."""
    exercises = {e.name: e for a in assignments for e in a.exercises}
    passed = {name for name, e in exercises.items() if e.status == "passed"}
    kept = _kept_given(exercises.values())
    for assignment in assignments:
        own = {e.name for e in assignment.exercises}
        for exercise in assignment.exercises:
            for index, check in enumerate(exercise.checks):
                helper = check.forgiven_by
                if not helper or helper in own or (assignment_of or {}).get(helper) == assignment.id:
                    continue
                if helper not in exercises:
                    why = (f"your {helper} is not graded with this assignment, so its mistake is charged nowhere in this "
                           f"grading (graded together, it is charged there, once)")
                elif helper in passed:  # (as in charged_once)
                    why = f"your {helper} passes all of its own checks"
                elif check.forgiven_for and check.forgiven_for not in exercises[helper].misconceptions:
                    why = (f"your {helper} gives {check.forgiven_for} here, a mistake its own checks do not find in "
                           "it")
                else:
                    continue
                exercise.checks[index] = _given_another(check, lambda h: h in exercises and h not in passed, kept) or \
                    _the_exercises_own(check, why)
    return assignments


def _kept_given(exercises) -> set:
    """(exercise, helper) where a check of the exercise's own was kept as right given that helper."""
    return {(e.name, c.forgiven_by) for e in exercises for c in e.checks if c.status == "passed" and c.forgiven_by}


def _given_another(check, lost, kept: set):
    """``check`` kept as right given the first of the other helpers it was also found right given, each alone put right
    for which ``lost(helper)``: one of the exercise's own other helpers (``forgiven_either``: which of them was tried
    first depends on what the process had graded, grader.grading.chains), or one of that helper's own
    (``forgiven_also``) through which the helper it was kept given (``forgiven_by``) kept a check of its own
    (``kept``: its own grading shows that helper's mistake reach it: the wrapper given a class right given
    apply_causal_mask; red team round 28a, a3: a softmax clean on its own checks whose softmax_naive was wrong only
    where its own checks never look, beside a cheap unrelated slip); None where there is none."""
    import dataclasses

    either = [h for h in check.forgiven_either if lost(h)]  # (the exercise's own others: no chain to show)
    deeper = [h for h in check.forgiven_also if lost(h) and (check.forgiven_by, h) in kept]
    if not either and not deeper:
        return None
    helper = (either or deeper)[0]
    return dataclasses.replace(check, forgiven_by=helper, forgiven_also=(), forgiven_either=(), forgiven_call="",
                               forgiven_for="", forgiven_raise=False,
                               message=f"right, given your {helper}, which this uses; but your {helper} is wrong (its "
                                       f"own checks fail): fix the {helper} exercise")


def _the_exercises_own(check, why: str):
    """``check``, kept as right given a helper, failed instead: the case is the exercise's own (``why``), named with
    the mistake the helper's result showed on it (``forgiven_for``: the student's code makes it, in that helper; issue
    44's blind parity round, F4: a 03 causal_mask hiding the diagonal beside 04's wrapper, named on the student's
    side, where the run with a right mask is not had, and by nothing here)."""
    import dataclasses

    own = check.message.split(";", 1)[-1].strip()
    message = f"wrong given the contract: {why}, so this case is this exercise's own ({own})"
    return dataclasses.replace(check, status="failed", forgiven_by="", forgiven_call="", kept=0.0, message=message,
                               unexplained=message,
                               misconceptions=(check.forgiven_for,) if check.forgiven_for else check.misconceptions)


def _bound_raised_helpers(exercise, named: set[str]) -> None:
    """A case kept because the student's helper raised shows nothing of the exercise's own. Where the
    helper's own exercise names its mistake (``view`` on a non-contiguous tensor: a slip the catalogue
    knows, that raises only on some inputs), the case is kept, as the contract's "a mistake costs once"
    asks. Otherwise (a stub's NotImplementedError, a helper made to raise so that what uses it need not
    be written), every point is earned by a right answer: such cases keep no more weight than the
    exercise's own right outputs earned elsewhere (checks passed on their own that compared an output)."""
    import dataclasses

    earned = sum(c.weight for c in exercise.checks if c.status == "passed" and not c.forgiven_by and c.verified)
    kept = 0.0
    for index, check in enumerate(exercise.checks):
        if check.status != "passed" or not check.forgiven_raise or check.forgiven_by in named:
            continue
        if kept + check.weight <= earned:
            kept += check.weight
            continue
        helper = check.forgiven_by
        exercise.checks[index] = dataclasses.replace(
            check, status="failed", forgiven_by="", forgiven_call="", forgiven_raise=False, kept=0.0,
            message=f"not checked: your {helper} raised on this case, so nothing of this exercise ran to the end; "
                    f"a case like this keeps its points only as far as this exercise's own right answers on other "
                    f"cases earn them. Fix the {helper} exercise, and this one is graded on every case")
