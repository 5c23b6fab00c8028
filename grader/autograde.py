"""``grade autograde``: many untrusted submissions, graded in parallel, none of them lost.

All submissions of a run are graded on the same cases (one seed, drawn at the start unless given).
The parent imports torch once, then forks ``workers`` grading processes, each with its own zygote
(so a submission's student code never shares a worker with another's). The parent hands out
submissions, writes every result itself, atomically, as ``DIR/<submission>.json``, and finally
``DIR/summary.csv``. A grading process that dies is replaced and its submission retried once; a
second death is recorded as ``crashed``. Every submission gets a result file: one that cannot be
read (grader/intake.py) an ``error`` result, without stopping the others. Last, once no student code
runs, the parent rewrites every result from memory and lists them in the folder's manifest, which
is what summary.csv and ``grade export`` believe (grader/result_folder.py).
"""
from __future__ import annotations

import json
import multiprocessing
import os
import queue
import secrets
import shutil
import sys
import tempfile
import time
from pathlib import Path

from grader.config import Course
from grader.errors import GraderError, SubmissionError, UsageError
from grader.intake import Job, discover  # noqa: F401 - Job: the jobs' type
from grader.result_folder import (locked, read_manifest, read_result, sort_results, write_atomically,
                                  write_manifest, write_summary)
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


# --- results on disk (grader/result_folder.py) -----------------------------------------------
def failed_result(assignments, name: str, status: str, message: str, seed: int) -> SubmissionResult:
    """A result for a submission that could not be graded at all: every exercise of ``assignments``
    (those graded in this run) ``status``, 0 points."""
    results = [AssignmentResult(a.id, a.title, [ExerciseResult(n, p, [CheckOutcome("submission", 1.0, status,
               message)]) for n, p in a.points]) for a in assignments]
    return SubmissionResult(name, seed, "cpu", 0.0, results)


# --- the grading processes -----------------------------------------------------------------------
def _grading_process(course: Course, assignments, device: str, seed: int | None, confinement, tasks,
                     results, sandboxes: Path) -> None:
    """Grade the jobs handed out on ``tasks`` until a None arrives; report on ``results``. Its
    temporary folders go under ``sandboxes``, which the run removes even if this process is killed."""
    import signal

    tempfile.tempdir = str(sandboxes)
    from grader.runner import Grader
    from grader.submission import resolve_submission

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when to stop
    grader = Grader(course, device=device, confinement=confinement)  # a sandbox, and a uid per submission

    current: list = []  # the job being graded, until it is reported

    def jobs():
        while (job := tasks.get()) is not None:
            results.put(("started", os.getpid(), job.name))
            current[:] = [job]
            yield job

    def report(job, outcome):
        current[:] = []
        if isinstance(outcome, SubmissionError):  # the submission's own fault (no assignment in it...)
            results.put(("invalid", os.getpid(), job.name, str(outcome)))
        elif isinstance(outcome, GraderError):  # the grader's: the sandbox cannot start, the suites cannot run
            results.put((GRADER_ERROR, os.getpid(), job.name, str(outcome)))
        else:
            outcome.submission = job.name
            results.put(("done", os.getpid(), job.name, outcome.to_json()))

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


def autograde(*, course: Course, paths: list[Path], out: Path, workers: int, shard: str | None, resume: bool,
              device: str, seed: int | None, assignments=None) -> int:
    """Grade every submission under ``paths`` (this shard of them) into ``out``, on ``assignments``
    (default: the whole course; a week's batch grades that week's only, and its results, summary.csv
    and export hold only their points). 0 when each submission has a result."""
    assignments = tuple(assignments or course.assignments)
    from grader.confine import describe
    from grader.confine import confinement_for
    from grader.runner import pick_device

    if workers < 1:
        raise UsageError("--workers must be at least 1")
    index, count = parse_shard(shard)
    device = pick_device(device)
    # one seed for the run: every submission of the batch is graded on the same cases (fair, and the
    # reference's results are computed once per grading process; grader/reference_memo.py)
    seed = secrets.randbelow(10**6) if seed is None else seed
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UsageError(f"--out {out}: {error.strerror or error}") from None
    earlier = read_manifest(out) or {}  # read before any student code runs: it could write one
    # --resume: what has a result; one the grader failed on (grader-error) is graded again
    done = {path.stem for path in sort_results(out, earlier)[0]
            if (data := read_result(path)) is not None and not grader_error_of(data)} if resume else set()
    scratch = Path(tempfile.mkdtemp(prefix="grade-autograde-"))
    private = (out.resolve(), scratch, *(path.resolve() for path in paths))
    confinement = confinement_for(course, private)
    print(describe(confinement), file=sys.stderr)
    try:
        jobs = discover(paths, course, scratch)[index - 1::count]
        todo = [job for job in jobs if job.name not in done]
        unreadable = {job.name: json.dumps(failed_result(assignments, job.name, "error", job.error,
                                                         seed or 0).to_json(), indent=2) + "\n"
                      for job in todo if job.error}
        for name, text in unreadable.items():  # an error result each, never the batch stopped
            write_atomically(out / f"{name}.json", text)
        todo = [job for job in todo if not job.error]
        # the grading processes' own scratch (sandboxes, working copies) lives under one folder of this
        # run's: what a grading process killed mid-submission leaves is removed with it, below
        sandboxes = Path(tempfile.mkdtemp(prefix="grade-sandboxes-"))
        sandboxes.chmod(0o711)  # a submission's uid passes through to its own working copy, and lists nothing
        try:
            written = _run(course, assignments, todo, out, workers=min(workers, max(1, len(todo))), device=device,
                           seed=seed, total=len(jobs), done_before=len(jobs) - len(todo), confinement=confinement,
                           sandboxes=sandboxes)
        finally:
            shutil.rmtree(sandboxes, ignore_errors=True)
        for name, text in unreadable.items():  # again, now that no student code runs (see _run's end)
            write_atomically(out / f"{name}.json", text)
        with locked(out):  # last: what summary.csv and export will believe (grader/result_folder.py)
            dropped = write_manifest(out, {**written, **unreadable}, earlier,
                                     trust_meanwhile=confinement.mode != "same-user")
            write_summary(out, course)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    for file in dropped:
        print(f"grade: warning: {file} was listed in {out} by another run while student code ran as your user: "
              "left out (give runs at the same time an --out each)", file=sys.stderr)
    believed = {path.stem for path in sort_results(out)[0]}
    missing = [job.name for job in jobs if job.name not in believed]
    for name in missing:
        print(f"grade: error: no result for {name} (grade it again with --resume)", file=sys.stderr)
    failed_here = [(path.stem, line) for path in sort_results(out)[0] if path.stem in {j.name for j in jobs}
                   and (data := read_result(path)) is not None and (line := grader_error_of(data))]
    for name, line in failed_here:  # no valid score, and none charged: listed apart, graded again later
        print(f"grade: error: {name}: the grader itself failed ({line}): not a score; fix the machine and grade "
              "it again with --resume", file=sys.stderr)
    return 1 if missing else 2 if failed_here else 0


def _run(course, assignments, todo, out, *, workers, device, seed, total, done_before, confinement,
         sandboxes: Path) -> dict[str, str]:
    import torch  # noqa: F401 - imported once here, inherited by every grading process

    import grader.session  # noqa: F401 - and pytest with the grading side, likewise

    from grader.progress import Progress

    context = multiprocessing.get_context("fork")
    tasks, results = context.Queue(), context.Queue()
    for job in todo:
        tasks.put(job)

    def start():
        process = context.Process(target=_grading_process, daemon=True,
                                  args=(course, assignments, device, seed, confinement, tasks, results, sandboxes))
        process.start()
        return process

    processes = [start() for _ in range(workers)]
    by_name = {job.name: job for job in todo}
    in_flight: dict[int, tuple[str, float]] = {}  # pid -> (submission, started)
    attempts: dict[str, int] = {}
    remaining = set(by_name)
    limit = course.limits.submission_timeout_s + 60
    progress = Progress(total, done_before)
    written: dict[str, str] = {}

    def record(name, data):
        written[name] = json.dumps(data, indent=2) + "\n"
        write_atomically(out / f"{name}.json", written[name])
        remaining.discard(name)
        progress.advance(name, data["score"], data["max_score"], grader_error=grader_error_of(data))

    while remaining:
        try:
            message = results.get(timeout=0.5)
        except queue.Empty:
            message = None
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
                data = failed_result(assignments, name, GRADER_ERROR, message[3], seed or 0).to_json()
            else:  # the submission itself cannot be graded (no assignment in it, a bad archive...)
                data = failed_result(assignments, name, "error", message[3], seed or 0).to_json()
            record(name, data)
            continue
        for position, process in enumerate(processes):
            busy = in_flight.get(process.pid)
            if process.is_alive() and not (busy and time.monotonic() - busy[1] > limit):
                continue
            process.kill()  # its zygote's sandbox dies with it (bubblewrap's --die-with-parent), and with
            process.join()  # the sandbox's PID namespace every process of its submission
            name = in_flight.pop(process.pid, (None,))[0]
            if name in remaining:
                attempts[name] = attempts.get(name, 0) + 1
                if attempts[name] <= 1:
                    tasks.put(by_name[name])  # retried once, by a fresh process
                else:
                    message = "grading this submission crashed the grader twice"
                    record(name, failed_result(assignments, name, "crashed", message, seed or 0).to_json())
            processes[position] = start()
    for _ in processes:
        tasks.put(None)
    for process in processes:
        process.join(timeout=10)
        if process.is_alive():
            process.kill()
    progress.close()
    # Student code ran as this user and could have overwritten results written before it: write
    # every result of this run again, from memory, now that no student code runs.
    for name, text in written.items():
        write_atomically(out / f"{name}.json", text)
    return written
