"""One grading run of the suites under pytest: the workers that serve each assignment, the
deadline, and the plugin that gives suites their ``grade`` fixture and records how each check ends.
"""
from __future__ import annotations

import dataclasses
import functools
import re
import socket
import time
import traceback
from collections.abc import Mapping
from pathlib import Path

import pytest

from grader.config import Assignment, Course
from grader.errors import IsolationError
from grader.grading.chains import ChainRuns
from grader.grading.fixture import Grade
from grader.grading.outcomes import CheckFailed, GraderFault, RightGivenHelper, StudentFault
from grader.grading.models import Unrecorded, failure_under, keeping
from grader.grading.rehearsals import rehearse_diagnoses, rehearse_stand_ins
from grader.grading.recorded_outputs import NotReplayable
from grader.grading.oracle import LiveAnswers, Oracle, RecordedAnswers, Recorder, budget, signatures_in
from grader.grading.stand_ins import HELPERS, USES, modules_of, restore, verifiable
from grader.results import CheckOutcome
from grader.inside.protocol import STACK_FILE, HandleRef, WorkerSpec, clip
from grader.sandbox.client import WorkerFault, ZygoteClient
from grader.grading.graded_source import Choice, choose

# the share of a check's weight that a right output keeps where only its gradients fail (the forward is earned;
# docs/course-spec.md: "a partly right exercise earns part of its points")
FORWARD_SHARE = 0.5
FORWARD_KEPT = "; your output is right, so this check keeps half its points (the forward's share)"


class Student:
    """The grader's handle on one assignment of the submission, served by a worker."""

    def __init__(self, session: "GradingSession", assignment: Assignment):
        self.session = session
        self.assignment = assignment
        self.worker = None
        self.timed_out: set[str] = set()  # targets that ran out of time once: not run again
        self.import_fault: StudentFault | None = None  # an import that failed fails at once after
        self.hung: set[str] = set()  # functions a timeout stopped in: later workers make them fail at once
        self.oracle = None  # answers stand-ins' questions while a verification runs (grader.grading.oracle)
        self.ahead = None  # (number, spec): its first worker, asked of the zygote ahead (start_ahead), not taken yet

    def _worker(self):
        """The worker that has imported the module; a module whose import failed (raised, exited, hung)
        is imported once per grading: every later check gets the same fault at once."""
        if self.import_fault is not None:
            raise StudentFault(self.import_fault.kind, self.import_fault.message, self.import_fault.exception)
        try:
            return self._started_worker()
        except StudentFault as fault:
            if self.worker is None or self.worker.import_error:
                self.import_fault = fault
            raise

    def _spec(self, timeout: float):
        source = self.session.copy.sources.get(self.assignment.id)
        if source is None:
            raise StudentFault("not_implemented", f"no {self.assignment.module} or {self.assignment.notebook} "
                                                  f"found in the submission")
        return dataclasses.replace(self.session.worker_spec(self.assignment, source), import_timeout_s=timeout,
                                   hung=tuple(sorted(self.hung)))

    def start_ahead(self) -> None:
        """Have the zygote fork this assignment's worker now, and the worker import the module, while the
        grader goes on (collecting the suites, grading the assignments before it): its next check takes
        it (_started_worker). Nothing where there is no module to import, or the zygote cannot start."""
        if (self.worker is not None or self.ahead is not None or self.session.zygote is None
                or self.import_fault is not None):
            return
        try:
            spec = self._spec(self.session.timeout())
            self.ahead = (self.session.zygote.spawn_ahead(spec), spec)
        except (IsolationError, WorkerFault, StudentFault):  # said where its first check starts it
            self.ahead = None

    def renew(self) -> None:
        """End the worker (what the module kept, or a stand-in answered, ends with it: grader.grading.stand_ins.
        restore, Grade.afresh) and have the next one forked and importing the module at once, while the grader
        goes on; the next check takes it."""
        if self.worker is not None:
            self.worker.kill()
            self.worker = None
        self.start_ahead()

    def _started_worker(self):
        if self.worker is None or not self.worker.alive:
            timeout = self.session.timeout()
            ahead, self.ahead = self.ahead, None  # the first worker, or the one after a renew
            self.worker = None
            try:
                if ahead is not None:
                    self.worker = self.session.zygote.take(*ahead, timeout=timeout)
                else:
                    self.worker = self.session.zygote.spawn(self._spec(timeout), timeout=timeout)
            except IsolationError as error:  # the zygote could not start: no student code ran
                raise GraderFault(str(error)) from None
            except WorkerFault as fault:
                if fault.kind == "grader-error":
                    raise GraderFault(fault.message) from None
                raise StudentFault(fault.kind, "while importing your module: " + fault.message
                                   + self.where_it_was(fault)) from None
        if self.worker.import_error:
            fault = fault_of(self.worker.import_error)
            if fault.kind == "crashed":  # the worker could not start as it must
                raise fault
            kind = "not_implemented" if fault.kind == "not_implemented" else "error"
            raise StudentFault(kind, "importing your module failed:\n" + fault.message
                               + earlier_module_missing(self.session.course, self.assignment, fault))
        return self.worker

    def request(self, payload: dict) -> dict:
        return self.send(payload)()

    def send(self, payload: dict):
        """Send ``payload`` to the worker, and return what waits for its reply: called, it gives the reply
        (or raises as :meth:`request` would). Whatever the send itself meets is raised by that call too, so
        that the grader's work between the two (the reference's, grader.grading.fixture) runs the same either
        way. Nothing else may be sent to this worker before the reply is taken."""
        target = payload.get("name") or payload.get("target")
        key = target if isinstance(target, str) else None
        unwatched = payload.get("unwatched") is True
        try:
            if key in self.timed_out:
                raise StudentFault("timeout", f"{key} ran out of time in an earlier check, so it was not run again")
            worker = self._worker()
            worker.oracle = self.oracle
            timeout = self.session.timeout()
            if payload.get("op") == "call" and isinstance(payload.get("target"), (str, HandleRef)):
                # every call of a function or a module watched alike (red team rounds 20 and 22: the watching's
                # cost told the measured calls apart), but for a cached sequence whose memory is read
                # (grader.grading.fixture.Grade.call's ``unwatched``)
                payload = {name: value for name, value in payload.items() if name != "unwatched"}
                payload["measure"] = payload.get("measure") is True or not unwatched
                if isinstance(payload["target"], str) and payload["target"] in USES:  # its helpers' share counted apart (grader.grading.stand_ins.uses)
                    payload["within"] = list(USES[payload["target"]])
            started = worker.send(dict(payload, timeout_s=timeout), timeout=timeout)
        except WorkerFault as fault:
            return functools.partial(self._fault, fault, key)
        except (StudentFault, GraderFault) as failure:
            return functools.partial(_raise, failure)
        return functools.partial(self._reply, worker, timeout, started, key)

    def _fault(self, fault: WorkerFault, key: str | None):
        if fault.kind == "timeout" and key:
            self.timed_out.add(key)
        raise StudentFault(fault.kind, fault.message + self.where_it_was(fault)) from None

    def _reply(self, worker, timeout: float, started, key: str | None) -> dict:
        try:
            reply = worker.receive(timeout=timeout, started=started)
        except WorkerFault as fault:
            self._fault(fault, key)
        if reply.get("ok") is not True:
            fault = fault_of(reply)
            missing = earlier_module_missing(self.session.course, self.assignment, fault)
            raise StudentFault(fault.kind, fault.message + missing, fault.exception) if missing else fault
        return reply

    def where_it_was(self, fault: WorkerFault) -> str:
        """For a timeout: the student's own innermost frames when the worker wrote its stack, shortly
        before it was stopped (``protocol.STACK_FILE``); the empty string otherwise. The innermost
        function is remembered in ``hung``: the module's later workers make it raise at once."""
        source = self.session.copy.sources.get(self.assignment.id)
        if fault.kind != "timeout" or source is None:
            return ""
        frames = student_frames(source.parent, self.session.copy, self.session.zygote.inside)
        if frames:  # the function it was stuck in: not run again by the exercises that use it
            self.hung.add(frames[0][2])
        return format_frames(frames)

    def close(self):
        """Hang up on the worker; the zygote's end of the submission kills it with every other process
        of the submission (one request for all, not one each)."""
        if self.worker is not None:
            self.worker.hang_up()


_FRAME = re.compile(r'^\s*File "([^"\n]+)", line (\d+) in (\S+)$', re.M)


def _raise(failure: Exception):
    raise failure


def student_frames(folder, copy, inside) -> list[tuple[str, str, str, str]]:
    """The student's frames ``(file as they know it, line, function, code)``, innermost first (at most
    three), from the stack a worker wrote in ``folder`` (read without following a link, bounded)."""
    import linecache
    import os

    try:
        fd = os.open(folder / STACK_FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as handle:
            text = handle.read(64 << 10).decode("utf-8", "replace")
    except OSError:
        return []
    root = inside(copy.root)
    frames = []
    for path, line, name in _FRAME.findall(text):
        if not (path.startswith(root + os.sep) or ".ipynb [cell " in path) or len(frames) >= 3:
            continue
        outside = str(copy.root) + path[len(root):] if path.startswith(root) else None
        shown = path
        for inner, theirs in copy.display.items():
            if path.startswith(inside(inner) + os.sep):
                shown = theirs + path[len(inside(inner)):]
        frames.append((shown, line, name, linecache.getline(outside, int(line)).strip() if outside else ""))
    return frames


def format_frames(frames) -> str:
    lines = [f'  File "{clip(shown, 300)}", line {line}, in {clip(name, 100)}'
             + (f"\n    {clip(code, 200)}" if code else "") for shown, line, name, code in frames]
    return ("\nyour code was here when it was stopped (innermost first):\n" + "\n".join(lines)) if lines else ""


def helper_named(message: str) -> str:
    """The exercise a "right, given your HELPER ..." note names (its first word)."""
    import re

    found = re.match(r"right, given your (\w+)", message)
    return found.group(1) if found else ""


FAULT_KINDS = ("error", "not_implemented", "forbidden", "crashed", "timeout")  # each scores 0


def earlier_module_missing(course: Course, assignment, fault: StudentFault) -> str:
    """What to do when the module imports another assignment's module that is not beside it (04's
    ``from causal_attention import CausalAttention`` graded alone): grade the two together."""
    if fault.exception not in ("ModuleNotFoundError", "ImportError"):
        return ""
    for other in course.assignments:
        stem = other.module.removesuffix(".py")
        if other.id != assignment.id and (f"'{stem}'" in fault.message or f"from {stem} " in fault.message):
            return (f"\nYour {assignment.module} imports {stem}, the module of {other.id}, which is not in the "
                    f"submission: grade the two together (grade check {other.id} {assignment.id}), or put your "
                    f"{other.module} beside it")
    return ""


def fault_of(reply: dict) -> StudentFault:
    """What the student's process said went wrong, as a fault: a kind it may name (none passes), a
    message and an exception name of bounded length."""
    kind = reply.get("kind")
    message, exception = reply.get("message"), reply.get("exception")
    return StudentFault(kind if kind in FAULT_KINDS else "error",
                        clip(message) if isinstance(message, str) else "your code failed",
                        clip(exception, 100) if isinstance(exception, str) else None)


def _listed(folder: Path) -> list[Path]:
    """The entries of a submission's folder (none where it cannot be listed)."""
    try:
        return [p for p in folder.iterdir() if p.suffix == ".py" or p.is_dir()]
    except OSError:
        return []


class _FilesRun(Mapping):
    """A course module's name -> the files the worker runs for it (GradingSession.files_run), each found when
    the reading of the submission's code first reaches for it (an import of that module)."""

    def __init__(self, session: "GradingSession", assignments: dict[str, str]):
        self.session, self.assignments = session, assignments  # module name -> assignment id
        self.asked: list[str] = []  # the assignments whose files the reading reached for, in order

    def __getitem__(self, module: str) -> list:
        assignment_id = self.assignments[module]
        if assignment_id not in self.asked:
            self.asked.append(assignment_id)
        return self.session.files_run(assignment_id)

    def __contains__(self, module) -> bool:  # Mapping's would ask __getitem__, and read the files
        return module in self.assignments

    def get(self, module, default=()):  # Mapping's would take any KeyError from inside for a missing key
        return self[module] if module in self.assignments else default

    def __iter__(self):
        return iter(self.assignments)

    def __len__(self) -> int:
        return len(self.assignments)


class GradingSession:
    """Everything one grading run shares: course, submission copy, zygote, seed, device, deadline."""

    def __init__(self, course: Course, assignments, copy, zygote: ZygoteClient, *, seed: int, device: str,
                 references: dict, recording=None, uid: int | None = None, cgroups: tuple[str, ...] = (),
                 blocked: tuple[str, ...] = (), memo=None, debug: bool = False):
        self.course, self.copy, self.zygote = course, copy, zygote
        self.debug = debug  # suite tracebacks in the feedback (grade check --debug)
        self.memo = memo  # a grader.grading.reference_cache.ReferenceMemo the grading process keeps, or None
        self.uid, self.cgroups, self.blocked = uid, cgroups, blocked  # the submission's uid (as root) and cgroups
        self.seed, self.device = seed, device
        self.references = references
        self.recording = recording  # a grader.grading.recorded_outputs.Recording to fill or to replay, or None
        self.assignments = {a.id: a for a in assignments}
        self.wrong_calls: dict[str, set[str]] = {}  # check -> the helper calls it graded and found wrong
        # operation counts of the submission's right calls, by what a rule keeps them apart by (Grade.counts_seen)
        self.counts_seen: dict[tuple, list[tuple[int, int]]] = {}
        # the reference's operation counts by the call's sizes and settings (Grade.count_reference), counted once
        self.reference_counts: dict[tuple, int] = {}
        self.students: dict[str, Student] = {}
        # while a check marked ``apart`` runs: (its assignment, the students and counts_seen set aside) (enter)
        self._apart: tuple[str, dict, dict] | None = None
        self.deadline = time.monotonic() + course.limits.submission_timeout_s
        # an assignment folder with the module and the notebook: each exercise from where it is written
        self._unobserved: dict[str, str | None] = {}  # assignment id -> why its computation is not observed
        self._choices: dict[str, Choice | None] = {}  # made when first needed (choice()): the graded assignments'
        self._reached: dict[str, list[str]] = {}  # assignment id -> the others its code imports (reached_from)
        self._own: frozenset[str] | None = None  # the names of the modules the submission's folders hold
        self._signatures: dict | None = None  # its functions' signatures, read from its files (oracle.signatures_in)
        # each graded assignment read now, before any worker runs a line of it (issue 44); another of the
        # submission's when a check first reaches for it (student()), before its own worker starts
        for assignment_id in copy.sources:
            if assignment_id in self.assignments:
                self.unobserved(assignment_id)
        # then their workers, asked for in the order they are graded: each forks and imports while the checks
        # before it run (on the other processor, where there is one), taken by its assignment's first check
        for assignment_id in self.assignments:
            if assignment_id in copy.sources:
                self.student(assignment_id).start_ahead()

    def unobserved(self, assignment_id: str) -> str | None:
        """Why the grader cannot trust what it watches of this assignment's computation, in one line, or
        None (grader/grading/observable.py): read from the files the worker runs, in this process, when
        the session starts, before any of it runs (and the workers see the working copy read-only:
        grader.inside.zygote._read_only_copy). Its file, the notebook laid over it, and the files of every other course module
        they import (as their syntax says)."""
        if assignment_id not in self._unobserved:
            from grader.grading.observable import unobserved

            names = {a.id: a.module_name for a in self.course.assignments}
            if self._own is None:  # a notebook sits in its module's folder (grader.submission.WorkingCopy)
                self._own = frozenset(p.stem for folder in {p.parent for p in self.copy.sources.values()}
                                      for p in _listed(folder))
            files = _FilesRun(self, {names[a]: a for a in self.copy.sources if a in names})
            self._unobserved[assignment_id] = unobserved(
                self.files_run(assignment_id), course_files=files,
                course_modules=frozenset(names.values()), own=self._own,
                entry_points=frozenset(e for a in self.course.assignments for e in a.exercises))
            self._reached[assignment_id] = [assignment_id, *(a for a in files.asked if a != assignment_id)]
        return self._unobserved[assignment_id]

    def choice(self, assignment_id: str) -> Choice | None:
        """Which file each exercise of an assignment folder holding the module and a notebook is graded from
        (grader/grading/graded_source.py), or None (no notebook beside a module of the submission's, or nothing
        taken from it); made when first needed: for the assignments graded, and for another only when the
        submission's code imports it (a class folder of the whole course, graded on one assignment a week,
        parses one)."""
        if assignment_id not in self._choices:
            notebook = self.copy.overlays.get(assignment_id)
            self._choices[assignment_id] = None if notebook is None else \
                choose(self.copy.sources[assignment_id], notebook, self.course.assignment(assignment_id).exercises)
        return self._choices[assignment_id]

    def files_run(self, assignment_id: str) -> list:
        """The files the worker runs for an assignment: its source, and the notebook whose definitions are laid
        over it."""
        choice = self.choice(assignment_id)
        overlay = self.copy.overlays.get(assignment_id) if choice is not None and choice.from_notebook else None
        return [p for p in (self.copy.sources.get(assignment_id), overlay) if p]

    def cancel(self) -> None:
        """From another thread (grader.grading.grader.Grader.cancel): no check starts after this (each is a
        timeout at once), and every worker is hung up on, so that a request in flight ends now."""
        self.deadline = float("-inf")
        for student in list(self.students.values()):
            worker = student.worker
            if worker is not None:
                try:
                    worker.sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def timeout(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise StudentFault("timeout", f"grading this submission took longer than "
                                          f"{self.course.limits.submission_timeout_s:g} s in all")
        return min(self.course.limits.exercise_timeout_s, left)

    def worker_spec(self, assignment: Assignment, source) -> WorkerSpec:
        inside = self.zygote.inside
        return WorkerSpec(
            module_name=assignment.module_name, source=inside(source),
            search_path=tuple(inside(folder) for folder in self.copy.folders),
            workdir=inside(source.parent), student_root=inside(self.copy.root),
            display_map=tuple((inside(copy), shown) for copy, shown in self.copy.display.items()),
            device=self.device, memory_bytes=self.course.limits.memory_mb << 20,
            reply_limit=self.course.limits.output_mb << 20,
            notebooks=tuple((self.course.assignment(a).module_name, inside(p))
                            for a, p in self.copy.sources.items() if p.suffix == ".ipynb"),
            uid=self.uid, cgroups=self.cgroups, blocked=self.blocked,
            overlays=tuple((self.course.assignment(a).module_name, inside(self.copy.sources[a]),
                            inside(self.copy.overlays[a]), choice.from_notebook)
                           for a in self.reached_from(assignment.id)
                           if (choice := self.choice(a)) is not None and choice.from_notebook),
        )

    def reached_from(self, assignment_id: str) -> list[str]:
        """The submission's assignments whose modules the worker of ``assignment_id`` may import, each of which
        gets its notebook laid over its module (choice()): its own, and those the reading of its code followed
        (unobserved(): an import of a course module, in any spelling Python reads as one, and theirs in turn);
        every one where its code is not observed (an import the grader could not follow from the syntax)."""
        if assignment_id not in self.copy.sources or self.unobserved(assignment_id) is not None:
            return list(self.copy.sources)
        return self._reached.get(assignment_id) or list(self.copy.sources)  # not read (no reading): every one

    def source_of(self, assignment_id: str, exercise: str) -> tuple[str, str]:
        """The file an exercise was graded from (its name as the student knows it), and a note when
        the assignment's module and notebook both had something to say (grader/grading/graded_source.py)."""
        choice = self.choice(assignment_id)
        if choice is not None:
            return choice.source_of(exercise), choice.notes.get(exercise, "")
        source = self.copy.sources.get(assignment_id)
        return (source.name if source else ""), ""

    def student(self, assignment_id: str) -> Student:
        """The handle on one assignment of the submission: one graded in this run, or another that a
        check reaches for to name a root cause there (a class that stacks the student's earlier one)."""
        if assignment_id not in self.students:
            if assignment_id in self.copy.sources:
                self.unobserved(assignment_id)
            assignment = self.assignments.get(assignment_id) or self.course.assignment(assignment_id)
            self.students[assignment_id] = Student(self, assignment)
        return self.students[assignment_id]

    def enter(self, assignment_id: str, apart: bool) -> None:
        """Before a check of ``assignment_id``: a check marked ``apart`` (authoring.apart) runs on processes and
        state of its own. Its assignment's other checks have all run (keep_graded puts the apart ones last), and
        the first apart check sets aside every Student and the counts seen so far: it and the apart checks after
        it start from new workers (the module imported again) and no count, as a check graded by the second
        process (grader.grading.twins) does. Whatever comes next (another assignment's check, the figures, the
        end) ends them and takes the others back (leave_apart). The same on every path, so that a submission's
        verdict does not depend on which process graded which check."""
        if self._apart is not None and (not apart or self._apart[0] != assignment_id):
            self.leave_apart()
        if apart and self._apart is None:
            self._apart = (assignment_id, self.students, self.counts_seen)
            self.students, self.counts_seen = {}, {}

    def leave_apart(self) -> None:
        """End the apart checks' workers and take back what :meth:`enter` set aside; nothing where none run."""
        if self._apart is None:
            return
        for student in self.students.values():
            if student.worker is not None:
                student.worker.kill()
                student.worker = None
            student.close()
        _, self.students, self.counts_seen = self._apart
        self._apart = None

    def oracle(self, nodeid: str, helpers, reference) -> Oracle:
        """What answers the stand-ins of ``helpers`` in one verification run of check ``nodeid``: the
        reference (``reference``: the check's assignment's, then the others'), or in a replay (a student
        distribution) the record of what the reference's helpers answered on that check."""
        recording = self.recording
        if recording is not None and recording.replaying:
            records = recording.helpers.get(nodeid, [])
            if self._signatures is None:  # (read once a grading: the files do not change while it runs)
                self._signatures = signatures_in(
                    [f for a in self.course.assignments if a.id in self.copy.sources for f in self.files_run(a.id)])
            return Oracle(RecordedAnswers(records, self.course.tolerance, self._signatures), helpers,
                          budget(helpers, records))
        functions = {}
        for module in (reference, *self.references.values()):
            for name in helpers:
                own = getattr(module, name, None) if module is not None else None
                if callable(own):
                    functions.setdefault(name, own)
        return Oracle(LiveAnswers(functions, self.device), helpers, budget(helpers, None))

    def close(self) -> bool:
        """End every process of the submission; False if the zygote could not confirm it."""
        self.leave_apart()
        for student in self.students.values():
            student.close()
        return self.zygote.end_submission()


def _judged(check, args: dict) -> None:
    """``check(**args)``; where a student distribution could not finish a diagnosis (a lesson's computation not on
    record: grader.grading.models.Unrecorded), the failure it diagnosed, as it stands (no mistake named); with none,
    a failure saying so. Never a skip: a wrong output earns nothing because its diagnosis could not run."""
    grade = args.get("grade")
    try:
        check(**args)
        if grade is not None and getattr(grade, "given_right", None):  # (Grade.read_given_right)
            grade.settle_reads()
    except CheckFailed as failure:
        given = getattr(grade, "measured_given", None)
        if given is None or grade.value_failed or failure.fault is not None:
            raise
        # a property measured on a call right only given the student's helper (a split_heads wrong on long sequences
        # alone, one operation more there): measured again with a right one, where this failure stands unless that
        # run is had (issue 44's blind parity round: not-vectorised named on MultiHeadAttention for the helper's
        # operation, where the student's side, which cannot compose the helper's result, ran it)
        given.unverified = failure
        raise given from None
    except Unrecorded as missing:
        failure = failure_under(missing)
        if failure is None:
            failure = CheckFailed("this case could not be judged here (the lesson has no record of what it needs): "
                                  "the instructor's grading judges it")
        raise failure from None


class GradingPlugin:
    """Gives suites their ``grade`` fixture and records how each check ended."""

    def __init__(self, session: GradingSession):
        self.session = session
        self.outcomes: list[tuple[str, str, CheckOutcome]] = []  # (assignment, exercise, outcome)
        self.problems: list[str] = []  # what is wrong with the suites themselves (suite_problems)
        recording = session.recording  # a recording run keeps what the reference's helpers answer, per check
        self.recorder = (Recorder(session.references, (), session.device)
                         if recording is not None and not recording.replaying else None)
        # grading in two processes (grader.grading.twins): what draws the figures of some assignments' outcomes
        # where the grader allows it, else None; and what the second process graded, once it has
        self.twins = None
        self.twin: dict | None = None
        self.chains = ChainRuns(self)  # the runs with a right helper of those an exercise's code calls

    def pytest_configure(self, config):
        register_markers(config)

    @pytest.fixture
    def grade(self, request):
        return self.make_grade(request)

    def make_grade(self, request) -> Grade:
        assignment = request.node.get_closest_marker("assignment")
        marker = request.node.get_closest_marker("exercise")
        if assignment is None or marker is None:
            raise RuntimeError(f"{request.node.nodeid}: a check needs the assignment and exercise markers")
        assignment_id = assignment.args[0]
        self.session.enter(assignment_id, request.node.get_closest_marker("apart") is not None)
        return Grade(self.session, self.session.student(assignment_id), self.session.references.get(assignment_id),
                     request.node.nodeid, marker)

    @pytest.hookimpl(tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem):
        """Runs the check. A case found right but for a faulty helper of the student's keeps its points
        only once verified: see :meth:`_verify`. The lesson's computations answer from the recording where
        there is one (grader.grading.models)."""
        recording = self.session.recording
        with keeping(recording.models if recording is not None else None):
            return self._run_check(pyfuncitem)

    def _run_check(self, pyfuncitem):
        args = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
        if self.recorder is not None:
            if not self.recorder.installed:  # the suites have declared their helpers by now
                self.recorder.helpers = tuple(sorted(HELPERS))
                self.recorder.install()
            self.recorder.check = pyfuncitem.nodeid
        try:
            _judged(pyfuncitem.obj, args)
        except RightGivenHelper as given:
            first = pyfuncitem.funcargs.get("grade")
            try:
                self._verify(pyfuncitem, args, given)
            except RightGivenHelper as kept:
                if kept.verified:  # and where the helper is itself right given a helper of its own (a chain)
                    self.chains.also_given(pyfuncitem, args, kept, first)
                raise
            except (CheckFailed, StudentFault) as failure:  # not right given the helper the suite's blame modelled:
                # maybe given another its code calls (red team round 29b's F2: simple_self_attention calling the
                # student's softmax_naive, the blame modelling softmax)
                self.chains.after_failure(pyfuncitem, args, failure, tried=(given.helper,))
                raise
        except (CheckFailed, StudentFault) as failure:
            self.chains.after_failure(pyfuncitem, args, failure)  # a run with a right helper of those it calls
            raise
        if self.recorder is not None:  # a release: what a failing student's check will ask, asked now
            rehearse_stand_ins(self, pyfuncitem, args, rehearse_diagnoses(self, pyfuncitem, args))
        return True

    def _verify(self, item, args, given: RightGivenHelper, depth: int = 3, alone: bool = False):
        """Runs the check again from its start (same inputs) with the student's faulty helpers replaced, in
        the student's process, by stand-ins that ask the grader for each call's right result
        (grader/grading/oracle.py). Right then: the case keeps its points, verified. Wrong then: the
        exercise's own mistake, which the helper's hid, is the verdict (named as any failure is). A helper
        with no stand-in, or one the exercise does not reach by its name, leaves ``given`` as it was
        (bounded where the helper raised: run.charged_once), or its ``unverified`` verdict where only that
        run could confirm it; so does a run whose calls a student distribution has no record of, saying so.

        ``alone``: the run stands in for ``given.helper`` only, and only right then, having called it, is the case
        kept; anything else gives ``given.unverified``, the first run's verdict (grader.grading.chains: a helper
        the exercise's code calls, which no blame of its check modelled)."""
        first = (getattr(item, "funcargs", None) or {}).get("grade")
        # (the first run's: a right output whose gradients alone failed, which the verified run replaces)
        given.forward_right = given.forward_right or bool(getattr(first, "gradients_alone_failed", False))
        helpers, said = [given.helper], [given.message]
        while len(helpers) <= depth:
            if not verifiable(helpers):
                raise given.unverified or given
            grade = self.make_grade(item._request)
            oracle = grade.student.oracle = self.session.oracle(item.nodeid, helpers, grade.ref)
            try:
                placed = grade.student.request({"op": "stand_in", "helpers": helpers, "modules": modules_of(
                    self.session.course, grade.student.assignment, helpers)}).get("placed")
            except (StudentFault, WorkerFault):
                placed = None
            if sorted(placed or ()) != sorted(helpers):
                restore(grade.student)
                raise given.unverified or given
            try:
                item.funcargs["grade"] = grade  # what the outcome reads (verified outputs) is this run's
                _judged(item.obj, {**args, "grade": grade})
            except RightGivenHelper as again:  # another helper of theirs is at fault too
                if alone:
                    raise given.unverified from None
                if oracle.unanswered and again.helper in helpers:  # a stand-in refused (no record): not the helper
                    raise _not_checked_here(given, oracle, helpers) from None
                if not again.helper or again.helper in helpers:
                    raise given.unverified or given from None
                helpers.append(again.helper)
                said.append(again.message)
                continue
            except (CheckFailed, StudentFault) as failure:
                if alone:  # the run shows nothing of the helper's: the first run's verdict stands (a student
                    # distribution's run without the record of a call it made too: no note, the case is as failed)
                    raise given.unverified from None
                if oracle.unanswered:  # a student distribution without the record of a call it made
                    raise _not_checked_here(given, oracle, helpers) from None
                if oracle.refused:  # what failed was the call no right exercise makes (red team round 25b)
                    raise _called_otherwise(oracle, helpers) from None
                raise _with_right_helpers(failure, helpers) from None
            finally:
                restore(grade.student)
                oracle.calls.clear()  # the run's answers and their graphs, whatever still holds the oracle (a
                # traceback of this frame: red team round 27a kept every run's until the grading ended, 14 GiB)
            if alone and (oracle.refused or oracle.unanswered or not oracle.used):  # nothing of the helper's shown
                raise given.unverified
            if oracle.refused:  # the stand-in was asked what no right exercise asks: nothing of its own was shown
                raise _called_otherwise(oracle, helpers)
            given.verified, given.raised = True, False
            given.message = "; and ".join(said)  # every helper the run stood in for, the first named first
            raise given
        raise given.unverified or given

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session):
        """One submission's checks, each that needs nothing of pytest's protocol run without it, as a stream
        runs them (grader/grading/streamed_checks.py: about half a millisecond a check, a tenth of `grade
        check`); pytest's own loop where the suites did not collect cleanly, or with --debug."""
        from grader.grading.streamed_checks import is_lean, next_full, run_lean

        if session.testsfailed or self.problems or self.session.debug:
            return None
        items = list(session.items)
        lean = [is_lean(item) for item in items]
        following = next_full(items, lean)

        def run(indices):
            for index in indices:
                if lean[index]:
                    run_lean(items[index], self)
                else:
                    items[index].ihook.pytest_runtest_protocol(item=items[index], nextitem=following[index])

        if self.twins is not None:
            from grader.grading.twins import graded_in_two

            if graded_in_two(self, items, run, self.twins):
                return True
        run(range(len(items)))
        return True

    def pytest_sessionfinish(self, session):
        if self.recorder is not None:
            self.recorder.restore()
            self.session.recording.helpers.update({k: v for k, v in self.recorder.calls.items() if v})

    def pytest_collection_modifyitems(self, items):
        self.problems = keep_graded(items, self.session.course, self.session.assignments)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_makereport(self, item, call):
        """Record the check's outcome and return a lean report: pytest's own would parse the suite's
        source for every failure (seconds per run), and students never see it anyway."""
        error = call.excinfo.value if call.excinfo else None
        if isinstance(error, (pytest.skip.Exception, NotReplayable)):  # CUDA only, or not replayable: no points
            return pytest.TestReport(item.nodeid, item.location, {}, "skipped",
                                     (str(item.path), item.location[1], str(error)), call.when)
        if call.when == "call" or (call.when == "setup" and error is not None):
            self.outcomes.append(self._outcome(item, call))
        outcome = "passed" if error is None else "failed"
        return pytest.TestReport(item.nodeid, item.location, {}, outcome, None if error is None else "failed",
                                 call.when, duration=call.duration, start=call.start, stop=call.stop)

    def _outcome(self, item, call) -> tuple[str, str, CheckOutcome]:
        marker = item.get_closest_marker("exercise")
        assignment = item.get_closest_marker("assignment").args[0]
        name = getattr(item, "originalname", item.name).removeprefix("test_")
        weight = float(marker.kwargs.get("weight", 1))
        error = call.excinfo.value if call.excinfo else None
        wrong_calls = tuple(sorted(self.session.wrong_calls.pop(item.nodeid, ())))
        grade = (getattr(item, "funcargs", None) or {}).get("grade")
        verified = bool(getattr(grade, "verified", 0))
        forward_right = bool(getattr(grade, "gradients_alone_failed", False))  # Grade._blame_gradients
        if error is None or (isinstance(error, RightGivenHelper) and error.kept_in_place and error.verified):
            check = CheckOutcome(name, weight, "passed", verified=verified)
        elif isinstance(error, RightGivenHelper):  # the mistake is charged in the helper's own exercise
            check = CheckOutcome(name, weight, "passed", error.message, forgiven_by=helper_named(error.message),
                                 forgiven_call=error.call, forgiven_raise=error.raised,
                                 forgiven_for=error.named, forgiven_also=tuple(error.also),
                                 forgiven_either=tuple(error.either),
                                 # what it would keep, failed: the share grader.grading.charges does not move
                                 kept=FORWARD_SHARE if forward_right or error.forward_right else 0.0)
        elif isinstance(error, CheckFailed):
            # a right output whose gradients alone fail keeps the forward's share (issue 46: a right forward
            # with an in-place change that breaks autograd kept 8/40)
            kept = FORWARD_SHARE if forward_right else 0.0
            message = error.message + (FORWARD_KEPT if kept else "")
            check = CheckOutcome(name, weight, "failed", message, error.misconceptions,
                                 ruled_out=tuple(getattr(error, "ruled_out", ())),
                                 unexplained=str(getattr(error, "unexplained", error.message)) + (FORWARD_KEPT if kept else ""),
                                 kept=kept)
        elif isinstance(error, GraderFault):  # the grader's own failure: no points taken or given
            check = CheckOutcome(name, weight, "grader-error", f"{error.message}; this is not your fault, and "
                                 "costs you nothing: tell your instructor")
        elif isinstance(error, StudentFault):
            message = "not attempted yet" if error.kind == "not_implemented" else error.message
            misconceptions = ("forbidden-op",) if error.kind == "forbidden" else ()
            kept = FORWARD_SHARE if forward_right and error.kind == "error" else 0.0  # its backward raised
            check = CheckOutcome(name, weight, error.kind, message + (FORWARD_KEPT if kept else ""), misconceptions,
                                 kept=kept)
        else:  # a bug in the suite or the grader: not the student's fault, and no internals shown
            message = (f"the grader could not run this check ({type(error).__name__}); this is not your fault, "
                       "please report it")
            if self.session.debug:  # grade check --debug: the suite author sees where their check broke
                message += "\n" + suite_traceback(error)
            check = CheckOutcome(name, weight, "grader-error", message)
        check.duration_s = round(call.duration, 6)
        check.wrong_calls = wrong_calls
        check.rules_read = tuple(getattr(grade, "rules_read", ()))
        check.rules_broken = tuple(getattr(grade, "rules_broken", ()))
        check.rules_unverified = tuple(getattr(grade, "rules_unverified", ()))
        return assignment, marker.args[0], check


def _called_otherwise(oracle: Oracle, helpers: list[str]) -> CheckFailed:
    """The verdict of a run with right helpers in which the exercise called one as no right exercise does (with
    arguments its signature does not take, more often, another helper): the case is the exercise's own (red team
    round 25: a flag that ran the caller's loop inside its helper, refused by the stand-in and caught)."""
    which = " and ".join(helpers)
    return CheckFailed(f"with a right {which} in place of yours, this exercise called it as no right exercise does "
                       f"({oracle.refused[0]}), so this case is this exercise's own: call {which} as the contract "
                       "writes it, and compute the rest in this exercise")


def _not_checked_here(given: RightGivenHelper, oracle: Oracle, helpers: list[str]) -> Exception:
    """The case as it stands without the run with right helpers (kept, or its unverified verdict: see
    Oracle.gap_keeps_the_case), saying that run could not be had on the student's side: the instructor's
    grading runs it."""
    verdict = given if oracle.gap_keeps_the_case() and not given.by_stand_in_only else (given.unverified or given)
    if isinstance(verdict, CheckFailed) and verdict.misconceptions:
        # the student's helper, wrong on this very case, may give the output the mistake named would: only the run
        # with a right one could tell whose it is, so neither is named (issue 44's blind parity round, F2: the
        # window mask's hidden diagonal named on CachedMultiHeadAttention, repeat_kv's tiling on the GQA class)
        verdict.misconceptions, verdict.message = (), verdict.unexplained
    which = " and ".join(helpers)
    note = (f" (this case could not be checked with a right {which} on your side; your instructor's grading "
            "checks it)")
    verdict.message = getattr(verdict, "message", str(verdict)) + note
    verdict.args = (verdict.message,)
    return verdict


def _with_right_helpers(failure: Exception, helpers: list[str]) -> Exception:
    """``failure`` of a check run with right versions of the student's ``helpers``, saying so in the
    suites' words only: the mistake it names and that mistake's explanation (chosen among the suite's own
    candidates), nothing of what the student's code gave in that run (its output's values or shape, what
    it raised, its exception's name, all the student's to choose), any of which could carry what the
    stand-ins answered out of the verification (red team rounds 9 and 14: an exception class named after
    the answers, an empty output whose shape spelled them). The first run, without the stand-ins, showed
    its failure whole."""
    which = " and ".join(helpers)
    unexplained = getattr(failure, "unexplained", None)
    named = isinstance(failure, CheckFailed) and isinstance(unexplained, str) and \
        failure.message.startswith(unexplained + "; ")
    explanation = failure.message[len(unexplained) + 2:] if named else ""
    failure.message = (f"with a right {which} in place of yours (fix yours too), this exercise is still wrong"
                       + (f": {explanation}" if explanation else f" (run it with your own {which} fixed to see where)"))
    failure.args = (failure.message,)
    if isinstance(failure, StudentFault):
        failure.exception = None
    if hasattr(failure, "unexplained"):
        failure.unexplained = failure.message
    return failure


def suite_traceback(error: BaseException) -> str:
    """``error``'s traceback from the check down (pytest's and pluggy's own frames left out)."""
    frames = [f for f in traceback.extract_tb(error.__traceback__)
              if not any(part in f.filename for part in ("/_pytest/", "/pluggy/"))]
    return ("Traceback (most recent call last):\n" + "".join(traceback.format_list(frames))
            + "".join(traceback.format_exception_only(type(error), error)))


def suite_problems(items, course: Course) -> list[str]:
    """What makes collected checks unable to count, said to the suite's author: a check without the
    markers, or naming an assignment or an exercise that course.toml lacks (a typo would otherwise
    drop the check, and its points would come from the others)."""
    known = {a.id: a for a in course.assignments}
    problems = []
    for item in items:
        assignment, exercise = item.get_closest_marker("assignment"), item.get_closest_marker("exercise")
        if assignment is None or exercise is None or not exercise.args or not assignment.args:
            problems.append(f"{item.nodeid}: a check needs its suite's assignment marker and @exercise(name)")
        elif assignment.args[0] not in known:
            problems.append(f"{item.nodeid}: assignment {assignment.args[0]!r} is not in course.toml "
                            f"(it has: {', '.join(known)})")
        elif exercise.args[0] not in known[assignment.args[0]].exercises:
            problems.append(f"{item.nodeid}: exercise {exercise.args[0]!r} is not an exercise of "
                            f"{assignment.args[0]} in course.toml (it has: "
                            f"{', '.join(known[assignment.args[0]].exercises)})")
    return problems


def keep_graded(items, course: Course, assignment_ids) -> list[str]:
    """Keep the checks of ``assignment_ids`` in ``items``; when the suites themselves are broken
    (:func:`suite_problems`) keep none, and return what is wrong, for the grader to say (grading/grader.py)."""
    problems = suite_problems(items, course)
    items[:] = [] if problems else [i for i in items if i.get_closest_marker("assignment").args[0] in assignment_ids]
    first: dict[str, int] = {}
    for index, item in enumerate(items):
        first.setdefault(item.get_closest_marker("assignment").args[0], index)
    # each assignment's checks marked apart after its others, each kind in the suites' order (GradingSession.enter)
    items.sort(key=lambda item: (first[item.get_closest_marker("assignment").args[0]],
                                 item.get_closest_marker("apart") is not None))
    return problems


def register_markers(config) -> None:
    config.addinivalue_line("markers", "exercise(name, weight=1): the exercise a check grades")
    config.addinivalue_line("markers", "assignment(id): the assignment a suite grades")
    config.addinivalue_line("markers", "apart: a check graded on processes of its own, after its assignment's others")


class GradingStream:
    """A pytest plugin that grades one submission after another in one pytest session: the suites
    are collected once, then every collected check runs again for each submission (pytest runs an
    item again as its rerun plugins do), each with its own GradingPlugin.

    ``start(job)`` sets a submission's grading up (a runner._Run with its ``plugin``; a GraderError:
    the job cannot be graded), ``finish(run)`` ends it and gives its result, ``end(run)`` only ends
    it (after a failure), ``report(job, result or GraderError)``."""

    def __init__(self, course: Course, assignment_ids, jobs, *, start, finish, end, report, lean: bool = True):
        """``lean``: checks that need nothing of pytest's protocol run without it (streamed_checks.py)."""
        self.course, self.lean = course, lean
        self.problems: list[str] = []
        self.assignment_ids = frozenset(assignment_ids)
        self.jobs, self.start, self.finish, self.end, self.report = jobs, start, finish, end, report
        self.plugin: GradingPlugin | None = None
        self.error: BaseException | None = None  # what stopped the stream (no submission's fault)

    def pytest_configure(self, config):
        register_markers(config)

    def pytest_collection_modifyitems(self, items):
        self.problems = keep_graded(items, self.course, self.assignment_ids)

    @pytest.fixture
    def grade(self, request):
        return self.plugin.make_grade(request)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_makereport(self, item, call):
        return self.plugin.pytest_runtest_makereport(item, call)

    @pytest.hookimpl(tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem):
        return self.plugin.pytest_pyfunc_call(pyfuncitem)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session):
        from grader.errors import GraderError

        from grader.grading.streamed_checks import is_lean, next_full, run_lean

        items = list(session.items)
        if self.problems:
            return True  # the stream's owner raises (runner.Grader.grade_each)
        lean = [self.lean and is_lean(item) for item in items]
        of = [(marker := item.get_closest_marker("assignment")) and marker.args[0] for item in items]
        exercise = [(marker := item.get_closest_marker("exercise")) and marker.args[0] for item in items]
        try:
            for job in self.jobs:
                try:
                    run = self.start(job)
                except GraderError as error:
                    self.report(job, error)
                    continue
                except Exception as error:  # noqa: BLE001 - the grader's own bug, on this submission only
                    self.report(job, GraderError(f"the grader failed to prepare this submission "
                                                 f"({type(error).__name__}: {str(error)[:200]})"))
                    continue
                self.plugin = run.plugin
                wanted = {a.id for a in run.assignments}  # this submission's assignments (--watch: what changed)
                chosen = [index for index in range(len(items)) if of[index] in wanted
                          and (run.exercises is None or exercise[index] in run.exercises)]  # check(): one exercise
                following = next_full([items[i] for i in chosen], [lean[i] for i in chosen])
                try:
                    for position, index in enumerate(chosen):
                        if lean[index]:
                            run_lean(items[index], self.plugin)
                        else:
                            items[index].ihook.pytest_runtest_protocol(item=items[index], nextitem=following[position])
                except BaseException:
                    self.end(run)
                    raise
                self.report(job, self.finish(run))
        except BaseException as error:  # noqa: BLE001 - raised again by Grader.grade_each, outside pytest
            self.error = error
        return True
