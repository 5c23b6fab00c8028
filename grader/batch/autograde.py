"""``grade autograde``: many untrusted submissions, graded in parallel, none of them lost.

A class is graded on one seed: the results folder records it at its first run, and ``--resume``, the
other shards and every later run into it use it (:func:`class_seed`); a run into a folder that holds
results refuses unless it resumes, or starts afresh with ``--fresh``.
The parent imports torch once, then forks ``workers`` grading processes, each with its own zygote
(so a submission's student code never shares a worker with another's). The parent hands out
submissions, writes every result itself, atomically, as ``DIR/<submission>.json``, and finally
``DIR/summary.csv``. A grading process that dies is replaced (what it left removed) and its submission
retried once; a second death is recorded as ``crashed``. Every submission gets a result file and a
progress line: one that cannot be read (grader/batch/discover.py) an ``error`` result, without stopping the
others. The folder's manifest lists each result as it is written, and the submissions still pending;
last, once no student code runs, the parent rewrites every result from memory and lists them again,
verified: what summary.csv and ``grade export`` believe (grader/reporting/result_folder.py). Ctrl-C or SIGTERM
stops the run there: the folder keeps what was graded, and ``--resume`` grades the rest.
"""
from __future__ import annotations

import contextlib
import json
import multiprocessing
import multiprocessing.connection
import os
import pickle
import secrets
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

from grader.sandbox import leftovers
from grader.config import Course
from grader.errors import GraderError, SubmissionError, UsageError
from grader.batch.discover import Job, discover  # noqa: F401 - Job: the jobs' type
from grader.reporting.course_secret import course_secret
from grader.reporting.result_folder import (MANIFEST, check_owned, locked, pending, read_manifest, read_result,
                                            recorded_seed, sort_results, write_atomically, write_manifest,
                                            write_summary)
from grader.results import (GRADER_ERROR, AssignmentResult, CheckOutcome, ExerciseResult, SubmissionResult,
                            grader_error_of)


def parse_shard(text: str | None) -> tuple[int, int]:
    """``I/N`` (1 <= I <= N): this run grades the I-th of N deterministic slices."""
    if not text:
        return 1, 1
    try:
        index, count = (int(part) for part in text.split("/"))
    except ValueError:
        raise UsageError(f"--shard must look like 2/8, not {text!r}") from None
    if not 1 <= index <= count:
        raise UsageError(f"--shard {text}: the index must be between 1 and {count}")
    return index, count


# --- results on disk (grader/reporting/result_folder.py) -----------------------------------------------
def failed_result(assignments, name: str, status: str, message: str, seed: int) -> SubmissionResult:
    """A result for a submission that could not be graded at all: every exercise of ``assignments``
    (those graded in this run) ``status``, 0 points."""
    results = [AssignmentResult(a.id, a.title, [ExerciseResult(n, p, [CheckOutcome("submission", 1.0, status,
               message)]) for n, p in a.points]) for a in assignments]
    return SubmissionResult(name, seed, "cpu", 0.0, results)


# --- the grading processes -----------------------------------------------------------------------
def _grading_process(course: Course, assignments, device: str, seed: int | None, confinement, tasks,
                     results, sandboxes: Path, parent: int, cpu: int | None = None) -> None:
    """Grade the jobs handed out on ``tasks`` until a None arrives; report on ``results`` (this process's own
    end of a pipe: a process killed in the middle of a report breaks its own channel only). Its
    temporary folders go under ``sandboxes``, which the run removes even if this process is killed;
    it dies with the run (``parent``), however the run ends. With ``cpu``, it and every process it
    starts run on that processor only."""
    leftovers.die_with_parent(parent)
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the run's own handler (_interruptible)
    tempfile.tempdir = str(sandboxes)
    from grader.grading.grader import Grader
    from grader.submission import resolve_submission

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when to stop
    grader = Grader(course, device=device, confinement=confinement, batch=True, relative_paths=True)  # a sandbox, a uid per submission

    current: list = []  # the job being graded, until it is reported

    def jobs():
        while (job := tasks.get()) is not None:
            results.send(("started", os.getpid(), job.name))
            current[:] = [job]
            yield job

    def report(job, outcome):
        current[:] = []
        if isinstance(outcome, SubmissionError):  # the submission's own fault (no assignment in it...)
            results.send(("invalid", os.getpid(), job.name, str(outcome)))
        elif isinstance(outcome, GraderError):  # the grader's: the sandbox cannot start, the suites cannot run
            results.send((GRADER_ERROR, os.getpid(), job.name, str(outcome)))
        else:
            outcome.submission = job.name
            results.send(("done", os.getpid(), job.name, outcome.to_json()))

    queued = jobs()
    try:  # one pytest session grades every submission this process is handed
        grader.grade_each(queued, assignments, seed=seed, prepare=lambda job: resolve_submission(job.path, course),
                          report=report)
    except GraderError as error:  # the grader cannot grade here: the one being graded and each next one told so
        for job in list(current):  # then each next one, as it comes (the queue ends with a None)
            report(job, error)
        for job in queued:
            report(job, error)
    finally:
        grader.close()


class _Batch:
    """What a run has written into ``out``, kept in memory, and its manifest kept up to date with it: after
    each result, so that an interrupted run (Ctrl-C, SIGTERM, a killed process) leaves every finished
    result listed and the rest pending; and last, once no student code runs, from memory alone
    (grader/reporting/result_folder.py)."""

    def __init__(self, out: Path, earlier: dict, *, trust_meanwhile: bool, progress, seed: int, secret: bytes):
        self.out, self.earlier, self.trust_meanwhile, self.progress = out, earlier, trust_meanwhile, progress
        self.seed, self.secret = seed, secret  # the course's: it keys the manifest (result_folder.py)
        self.written: dict[str, str] = {}
        self.waiting: set[str] = set()
        self.collisions: dict[str, dict] = {}  # a submission's name -> the names that cleaned to one (discover)

    def record(self, name: str, data: dict, *, error: str | None = None) -> None:
        if name in self.collisions:  # said in its result, and so in summary.csv, export and report
            data = {**data, "name_collision": self.collisions[name]}
        self.written[name] = json.dumps(data, indent=2) + "\n"
        write_atomically(self.out / f"{name}.json", self.written[name])
        self.waiting.discard(name)
        with locked(self.out):
            write_manifest(self.out, self.written, self.earlier, trust_meanwhile=self.trust_meanwhile,
                           waiting=self.waiting, verify=False, seed=self.seed, secret=self.secret)
        self.progress.advance(name, data["score"], data["max_score"], grader_error=grader_error_of(data), error=error)

    def finish(self, course) -> list[str]:
        """Every result of this run written again from memory, the manifest verified, summary.csv: call it
        once no student code runs. The entries another run added and this one cannot trust, returned."""
        for name, text in self.written.items():
            write_atomically(self.out / f"{name}.json", text)
        with locked(self.out):
            dropped = write_manifest(self.out, self.written, self.earlier, trust_meanwhile=self.trust_meanwhile,
                                     waiting=self.waiting, seed=self.seed, secret=self.secret)
            write_summary(self.out, course, secret=self.secret)
        return dropped


class Interrupted(GraderError):
    """Ctrl-C or SIGTERM: what was graded is kept, the rest is pending (``--resume``)."""

    exit_code = 130


@contextlib.contextmanager
def _interruptible():
    """Ctrl-C and SIGTERM (Slurm's time limit, ``kill``) stop the run: the first raises KeyboardInterrupt
    where the run is, and any further one is ignored from then on, while the folder is put in order and
    until the process has exited (a run that was not stopped gets its handlers back)."""
    stopped = []

    def stop(signum, frame):
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        stopped.append(signum)
        raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():  # signals reach the main thread only
        yield
        return
    previous = signal.signal(signal.SIGINT, stop), signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        if not stopped:
            signal.signal(signal.SIGINT, previous[0])
            signal.signal(signal.SIGTERM, previous[1])


@contextlib.contextmanager
def _uninterrupted():
    """A Ctrl-C (or SIGTERM) while the folder is put in order waits until it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN), signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        yield
    finally:  # SIG_IGN again where the run was stopped (_interruptible)
        signal.signal(signal.SIGINT, previous[0])
        signal.signal(signal.SIGTERM, previous[1])


def class_seed(out: Path, *, seed: int | None, resume: bool, fresh: bool, sharded: bool,
               secret: bytes | None = None) -> int:
    """The seed this run grades on: a class is graded on one seed. A folder that holds results (or a run's
    pending submissions) keeps the seed its first run recorded: ``--resume`` takes it, as does another shard
    of the class (given that same ``--seed``); any other run into it is refused, unless ``fresh`` (every
    earlier result of the folder is then dropped, and the class graded again on the folder's seed unless
    ``seed`` names another: a newcomer's --fresh drew a new seed silently and moved scores). A new folder
    takes ``seed``, or a fresh one."""
    held = bool(read_manifest(out) or pending(out) or any(out.glob("*.json")))
    recorded = recorded_seed(out, secret) if held else None
    if fresh:
        return recorded if seed is None and recorded is not None else secrets.randbelow(10**6) if seed is None else seed
    if held and not (resume or (sharded and seed is not None and seed == recorded)):
        told = f" (seed {recorded})" if recorded is not None else ""
        raise UsageError(f"{out} already holds a run's results{told}: --resume grades what has no result there on "
                         f"the same seed, --fresh grades the whole class again (or give another --out)")
    if recorded is not None and seed is not None and seed != recorded:
        raise UsageError(f"{out} holds results graded on seed {recorded}, not {seed}: a class is graded on one seed "
                         f"(leave --seed out to take {recorded}, or --fresh to grade the whole class again)")
    if recorded is not None:
        return recorded
    return secrets.randbelow(10**6) if seed is None else seed


def _forget(out: Path) -> None:
    """``--fresh``: the folder's earlier run, listed in its manifest, and its summary, removed."""
    for name in read_manifest(out) or {}:
        with contextlib.suppress(OSError):
            (out / Path(name).name).unlink()
    for name in (MANIFEST, "summary.csv"):
        with contextlib.suppress(OSError):
            (out / name).unlink()


def autograde(*, course: Course, paths: list[Path], out: Path, workers: int, shard: str | None, resume: bool,
              device: str, seed: int | None, assignments=None, fresh: bool = False) -> int:
    """Grade every submission under ``paths`` (this shard of them) into ``out``, on ``assignments``
    (default: the whole course; a week's batch grades that week's only, and its results, summary.csv
    and export hold only their points), on the class's one seed (:func:`class_seed`). 0 when each
    submission has a result; an interrupted run keeps what it graded and raises :class:`Interrupted`."""
    assignments = tuple(assignments or course.assignments)
    from grader.sandbox.confine import describe
    from grader.sandbox.confine import confinement_for
    from grader.batch.progress import Progress
    from grader.grading.grader import pick_device

    if workers < 1:
        raise UsageError("--workers must be at least 1")
    index, count = parse_shard(shard)
    device = pick_device(device)
    if resume and fresh:
        raise UsageError("--resume and --fresh say opposite things: keep the folder's results, or grade afresh")
    created = not out.exists()  # a folder this run made, removed again if it finds nothing to grade
    try:
        out.mkdir(mode=0o755, parents=True, exist_ok=True)
    except OSError as error:
        raise UsageError(f"--out {out}: {error.strerror or error}") from None
    check_owned(out)  # the grader's alone: no one else may change a result in it (result_folder.py)
    secret = course_secret(course.root)  # keys the manifest, so that no one without it can forge one
    # one seed for the class: every submission is graded on the same cases, in every run and shard (fair,
    # and the reference's results are computed once per grading process; grader/grading/reference_cache.py)
    seed = class_seed(out, seed=seed, resume=resume, fresh=fresh, sharded=count > 1, secret=secret)
    if fresh:
        _forget(out)
    leftovers.sweep()  # what runs killed before this one left (grader/sandbox/leftovers.py)
    earlier = read_manifest(out) or {}  # read before any student code runs: it could write one
    # --resume: what has a result; one the grader failed on (grader-error) is graded again
    done = {path.stem for path in sort_results(out, earlier, secret=secret)[0]
            if (data := read_result(path)) is not None and not grader_error_of(data)} if resume else set()
    scratch = leftovers.scratch("grade-autograde")
    private = (out.resolve(), scratch, *(path.resolve() for path in paths))
    confinement = confinement_for(course, private)
    print(describe(confinement), file=sys.stderr)
    batch, stopped = None, False
    with _interruptible():
        try:
            try:
                notes: list[str] = []
                jobs = discover(paths, course, scratch, notes)[index - 1::count]
                for note in notes:  # what the class folder holds besides students: said, never silently dropped
                    print(f"grade: note: {note}", file=sys.stderr)
            except SubmissionError:  # nothing to grade (a path that is not there, a folder of nothing)
                if created and not any(out.iterdir()):
                    out.rmdir()
                raise
            todo = [job for job in jobs if job.name not in done]
            batch = _Batch(out, earlier, trust_meanwhile=confinement.mode != "same-user",
                           progress=Progress(len(jobs), len(jobs) - len(todo)), seed=seed, secret=secret)
            batch.waiting = {job.name for job in todo}
            batch.collisions = {job.name: job.collision for job in jobs if job.collision}
            for job in todo:
                if job.error:  # an error result each, and its progress line, never the batch stopped
                    batch.record(job.name, failed_result(assignments, job.name, "error", job.error, seed).to_json(),
                                 error=job.error)
            todo = [job for job in todo if not job.error]
            # the grading processes' own scratch (sandboxes, working copies) lives under one folder of this
            # run's: what a grading process killed mid-submission leaves is removed with it, below
            sandboxes = leftovers.scratch("grade-sandboxes")
            sandboxes.chmod(0o711)  # a submission's uid passes through to its own working copy, and lists nothing
            try:
                _run(course, assignments, todo, batch, workers=min(workers, max(1, len(todo))), device=device,
                     seed=seed, confinement=confinement, sandboxes=sandboxes)
            finally:
                leftovers.remove_tree(sandboxes)
        except KeyboardInterrupt:
            stopped = True
        finally:
            with _uninterrupted():  # last: what summary.csv and export will believe (grader/reporting/result_folder.py)
                dropped = batch.finish(course) if batch is not None else []
                if batch is not None:
                    batch.progress.close()
                leftovers.remove_tree(scratch)
    for file in dropped:
        print(f"grade: warning: {file} was listed in {out} by another run while student code ran as your user: "
              "left out (give runs at the same time an --out each)", file=sys.stderr)
    if stopped:
        left = len(batch.waiting) if batch is not None else 0
        raise Interrupted(f"interrupted: {len(batch.written) if batch else 0} result(s) written to {out}, "
                          f"{left} submission(s) not graded yet; finish with grade autograde ... --out {out} --resume")
    believed = {path.stem for path in sort_results(out, secret=secret)[0]}
    missing = [job.name for job in jobs if job.name not in believed]
    for name in missing:
        print(f"grade: error: no result for {name} (grade it again with --resume)", file=sys.stderr)
    names = {job.name for job in jobs}
    failed_here = [(path.stem, line) for path in sort_results(out, secret=secret)[0] if path.stem in names
                   and (data := read_result(path)) is not None and (line := grader_error_of(data))]
    for name, line in failed_here:  # no valid score, and none charged: listed apart, graded again later
        print(f"grade: error: {name}: the grader itself failed ({line}): not a score; fix the machine and grade "
              "it again with --resume", file=sys.stderr)
    return 1 if missing else 2 if failed_here else 0


def _run(course, assignments, todo, batch: _Batch, *, workers, device, seed, confinement, sandboxes: Path) -> None:
    from grader.grading.grader import import_torch

    import_torch()  # imported once in this process (by pick_device already), inherited by every grading process
    import grader.grading.pytest_session  # noqa: F401 - and pytest with the grading side, likewise

    context = multiprocessing.get_context("fork")
    # the tasks on one queue; the results on a pipe of each grading process's own: a queue's writers share a
    # lock, which a process killed while its feeder thread held it (its own submission's code killing it,
    # where student code runs as the grader's user) kept for ever, and every later result waited on it
    tasks = context.Queue()
    readers: dict[int, object] = {}  # position -> the parent's end of that grading process's pipe
    for job in todo:
        tasks.put(job)
    parent = os.getpid()
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    # as many grading processes as processors: each keeps to one, with its zygote and workers, which
    # take turns with it (a request, a reply): no migrations, no cache shared with the other one
    pinned = len(cpus) > 1 and workers <= len(cpus)

    def start(position):
        if position in readers:
            readers.pop(position).close()
        reader, writer = context.Pipe(duplex=False)
        process = context.Process(target=_grading_process, daemon=True,
                                  args=(course, assignments, device, seed, confinement, tasks, writer, sandboxes,
                                        parent, cpus[position] if pinned else None))
        process.start()
        writer.close()  # the child's alone: its death ends the pipe
        readers[position] = reader
        return process

    unread: list = []  # messages read, not yet handled

    def next_message():
        """The next report of any grading process, or None after half a second without one. A pipe that
        ends (its process died) or breaks mid-message is dropped: its process is restarted below."""
        if not unread:
            for reader in multiprocessing.connection.wait(list(readers.values()), timeout=0.5):
                try:
                    unread.append(reader.recv())
                except (EOFError, OSError, ValueError, pickle.UnpicklingError, AttributeError, ImportError,
                        IndexError, TypeError):
                    for position, own in list(readers.items()):
                        if own is reader:
                            readers.pop(position).close()
        return unread.pop(0) if unread else None

    processes = [start(position) for position in range(workers)]
    by_name = {job.name: job for job in todo}
    in_flight: dict[int, tuple[str, float]] = {}  # pid -> (submission, started)
    attempts: dict[str, int] = {}
    remaining = set(by_name)
    limit = course.limits.submission_timeout_s + 60

    def record(name, data):
        batch.record(name, data)
        remaining.discard(name)

    try:
        while remaining:
            message = next_message()
            if message is not None:
                kind, pid, name = message[:3]
                if kind == "started":
                    in_flight[pid] = (name, time.monotonic())
                    continue
                in_flight.pop(pid, None)
                if name not in remaining:
                    continue
                if kind == "done":
                    data = message[3]
                elif kind == GRADER_ERROR:  # no score: the grader's own failure, never the student's
                    data = failed_result(assignments, name, GRADER_ERROR, message[3], seed).to_json()
                else:  # the submission itself cannot be graded (no assignment in it, a bad archive...)
                    data = failed_result(assignments, name, "error", message[3], seed).to_json()
                record(name, data)
                continue
            for position, process in enumerate(processes):
                busy = in_flight.get(process.pid)
                if process.is_alive() and not (busy and time.monotonic() - busy[1] > limit):
                    continue
                process.kill()  # its zygote's sandbox dies with it (bubblewrap's --die-with-parent), and with
                process.join()  # the sandbox's PID namespace every process of its submission
                leftovers.sweep([sandboxes], pids={process.pid})  # its scratch and cgroups, now
                name = in_flight.pop(process.pid, (None,))[0]
                if name in remaining:
                    attempts[name] = attempts.get(name, 0) + 1
                    if attempts[name] <= 1:
                        tasks.put(by_name[name])  # retried once, by a fresh process
                    else:
                        message = "grading this submission crashed the grader twice"
                        record(name, failed_result(assignments, name, "crashed", message, seed).to_json())
                processes[position] = start(position)
        for _ in processes:
            tasks.put(None)
        for process in processes:
            process.join(timeout=10)
    finally:  # normally or interrupted: no grading process (nor its sandbox) outlives the run
        for process in processes:
            if process.is_alive():
                process.kill()
        for process in processes:
            process.join()
        for reader in readers.values():
            reader.close()
        leftovers.sweep([sandboxes], pids={process.pid for process in processes})
