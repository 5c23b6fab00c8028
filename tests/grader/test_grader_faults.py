"""A grader fault is never the student's: a check the grader itself could not run (it could not confine
student code, a suite's own bug) has status ``grader-error``, takes and gives no points, makes `grade
check` exit 2 with one line, is listed apart by `grade autograde`, and never becomes a 0 in summary.csv,
`grade export`, Gradescope's results or Classroom's points. The confinement failure is forced through
the zygote's own test hook (grader.inside.zygote.FAULT_INJECTION), on the real path: the worker's word, by
a pipe that no student code holds."""
import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grader.results import CheckOutcome, ExerciseResult, grader_error_of
from grader.inside.zygote import FAULT_INJECTION

ROOT = Path(__file__).resolve().parents[2]


def run_grade(*args, fault: str | None = "confine", module="grader"):
    """``python -m grader ARGS`` in the checkout, with the failure ``fault`` forced (None: none)."""
    env = {**os.environ, "COLUMNS": "120"}
    if fault:
        env[FAULT_INJECTION] = fault
    return subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, env=env)


def test_a_check_the_grader_could_not_run_takes_and_gives_nothing():
    exercise = ExerciseResult("softmax", 10, [CheckOutcome("a", 1, "passed"), CheckOutcome("b", 1, "failed"),
                                              CheckOutcome("c", 2, "grader-error", "could not confine")])
    assert exercise.score == 5.0 and exercise.status == "grader-error"
    assert ExerciseResult("x", 10, [CheckOutcome("c", 1, "grader-error")]).score == 0.0


def test_grade_check_says_the_grader_failed_and_exits_2(tmp_path):
    result = run_grade("check", "01_attention_basics", "--submission", "solutions", "--format", "json")
    assert result.returncode == 2, result.stderr
    data = json.loads(result.stdout)
    statuses = {e["status"] for a in data["assignments"] for e in a["exercises"]}
    assert statuses == {"grader-error"} and "forced by" in data["grader_error"]
    line = result.stderr.strip()
    assert line.startswith("grade: error: the grader itself failed") and "\n" not in line
    assert "Traceback" not in result.stderr


def test_without_the_fault_the_same_command_gives_full_marks():
    result = run_grade("check", "01_attention_basics", "--submission", "solutions", "--format", "json", fault=None)
    assert result.returncode == 0 and "grader_error" not in json.loads(result.stdout)


@pytest.fixture
def klass(tmp_path):
    root = tmp_path / "class"
    for name in ("ann", "ben"):
        folder = root / name / "01_attention_basics"
        folder.mkdir(parents=True)
        shutil.copy(ROOT / "solutions" / "01_attention_basics" / "attention_basics.py", folder)
    return root


@pytest.mark.slow
def test_autograde_lists_grader_faults_apart_and_no_zero_reaches_the_summary_or_the_export(klass, tmp_path):
    out = tmp_path / "results"
    result = run_grade("autograde", str(klass), "--out", str(out), "--assignment", "01_attention_basics",
                       "--workers", "1", "--seed", "3")
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("the grader itself failed") == 2  # each submission named, apart
    assert "grader error, no score" in result.stderr  # the progress line
    rows = list(csv.DictReader((out / "summary.csv").open()))
    assert [(r["submission"], r["score"], r["status"]) for r in rows] == [("ann", "", "grader-error"),
                                                                          ("ben", "", "grader-error")]
    assert all(r["01_attention_basics:softmax"] == "" for r in rows)
    export = run_grade("export", str(out), fault=None)
    assert export.returncode == 0, export.stderr
    exported = list(csv.DictReader(export.stdout.splitlines()))
    assert [(r["submission"], r["score"], r["01_attention_basics"], r["status"]) for r in exported] == [
        ("ann", "", "", "grader-error"), ("ben", "", "", "grader-error")]
    # --resume grades them again once the machine is fixed
    again = run_grade("autograde", str(klass), "--out", str(out), "--assignment", "01_attention_basics",
                      "--workers", "1", "--seed", "3", "--resume", fault=None)
    assert again.returncode == 0, again.stderr
    rows = list(csv.DictReader((out / "summary.csv").open()))
    assert [(r["submission"], r["score"], r["status"]) for r in rows] == [("ann", "100.0", "graded"),
                                                                          ("ben", "100.0", "graded")]


def test_classroom_reports_no_points_for_a_grader_fault(tmp_path):
    result = run_grade("check", "01_attention_basics", "--submission", "solutions", "--format", "json",
                       "--output", str(tmp_path / "grade.json"))
    assert result.returncode == 2
    notices = run_grade("classroom", str(tmp_path / "grade.json"), fault=None)
    assert notices.returncode == 2 and "Points" not in notices.stdout and "::error" in notices.stdout


@pytest.mark.slow
def test_gradescope_writes_no_zero_for_a_grader_fault(tmp_path):
    """No results.json: Gradescope shows the autograder's failure, with no score, and the instructor reruns."""
    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    shutil.copy(ROOT / "solutions" / "01_attention_basics" / "attention_basics.py", root / "submission")
    result = run_grade("run", str(root), "01_attention_basics", module="grader.platforms.gradescope")
    assert result.returncode == 2 and not (root / "results" / "results.json").exists()
    assert "The autograder failed, not this upload" in result.stdout
    assert grader_error_of({"assignments": [{"id": "a", "exercises": [{"name": "e", "status": "passed"}]}]}) is None


@pytest.mark.slow
def test_a_zygote_that_cannot_start_is_a_grader_error_in_every_command_and_never_hangs_a_batch(klass, tmp_path):
    """The sandbox itself cannot start (GRADE_FAULT_INJECTION=zygote): once, a batch waited for ever on
    the submission it was grading, and an error result charged the student."""
    check = run_grade("check", "01_attention_basics", "--submission", "solutions", "--format", "json",
                      fault="zygote")
    assert check.returncode == 2 and "Traceback" not in check.stderr
    assert {e["status"] for a in json.loads(check.stdout)["assignments"] for e in a["exercises"]} == {"grader-error"}
    out = tmp_path / "results"
    batch = run_grade("autograde", str(klass), "--out", str(out), "--assignment", "01_attention_basics",
                      "--workers", "1", fault="zygote")
    assert batch.returncode == 2, batch.stderr
    rows = list(csv.DictReader((out / "summary.csv").open()))
    assert [(r["submission"], r["score"], r["status"]) for r in rows] == [("ann", "", "grader-error"),
                                                                          ("ben", "", "grader-error")]


def test_where_the_probe_cannot_confine_a_worker_the_grader_takes_a_weaker_mode_and_says_so():
    """The zygote's first word, before it loads torch, is whether a worker can be confined (forced
    here): the grader then grades without the sandbox (a uid per submission as root) and says so."""
    result = run_grade("check", "01_attention_basics", "--submission", "solutions", "--format", "json",
                       fault="probe")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["score"] == 100 and data["isolation"] in ("separate-user-only", "same-user")
    assert "the sandbox cannot confine student code here (forced by" in result.stderr


def test_under_separate_user_required_a_probe_that_fails_refuses_in_one_line(tmp_path):
    course = tmp_path / "course"
    course.mkdir()
    text = (ROOT / "course.toml").read_text()
    assert 'separate_user = "auto"' in text
    (course / "course.toml").write_text(text.replace('separate_user = "auto"', 'separate_user = "required"'))
    for name in ("solutions", "suites"):
        (course / name).symlink_to(ROOT / name)
    result = run_grade("--course", str(course), "check", "01_attention_basics", "--submission",
                       str(ROOT / "solutions"), fault="probe")
    if "bubblewrap" in result.stderr and "required" in result.stderr and "cannot make" in result.stderr:
        pytest.skip("no sandbox on this machine: required refuses before any probe")
    assert result.returncode == 2, result.stdout[-1000:] + result.stderr
    assert result.stderr.strip().startswith('grade: error: separate_user = "required" in course.toml, but student '
                                            "code cannot be confined here (forced by")
    assert "Traceback" not in result.stderr


def test_a_fork_that_fails_for_want_of_processes_is_the_graders_before_the_submission_ran_and_its_own_after(
        monkeypatch):
    """Issue 33, item 1: the zygote says grader_fault when a worker cannot be started, unless the submission's
    code has run (a worker of it started) and the fork or clone failed with EAGAIN or ENOMEM: what it
    holds is its own, a crash said in its terms. Any other failure stays the grader's, and each
    submission starts afresh."""
    import errno
    import socket

    from grader.inside import protocol, zygote
    from grader.inside.protocol import WorkerSpec

    ours, theirs = socket.socketpair()
    spare, _ = socket.socketpair()
    z = zygote.Zygote(theirs, {"namespaces": False})
    eagain = (0, "[Errno 11] Resource temporarily unavailable", None, errno.EAGAIN)
    tries = iter([eagain, (424242, "", spare, 0), eagain, (0, "mount: Operation not permitted", None, errno.EPERM),
                  (0, "[Errno 12] Cannot allocate memory", None, errno.ENOMEM), eagain])
    monkeypatch.setattr(zygote, "_start_worker", lambda spec, namespaces, close=(): next(tries))
    spec = WorkerSpec(module_name="m", source="/m.py", search_path=(), workdir="/", student_root="/", display_map=(),
                      device="cpu", memory_bytes=1 << 30, reply_limit=1 << 20)

    def spawn() -> dict:
        z.spawn(spec)
        _, fds, _, _ = socket.recv_fds(ours, 1, 1)
        for fd in fds:
            os.close(fd)
        return protocol.decode(protocol.recv(ours, limit=protocol.CONTROL_LIMIT, timeout=5),
                               limit=protocol.CONTROL_LIMIT)

    first = spawn()  # nothing of the submission has run: the grader's, whatever the error
    assert first["grader_fault"] is True and not first["exhausted"]
    assert spawn()["ok"] is True  # its first worker: its code runs from here
    held = spawn()
    assert held["grader_fault"] is False and held["exhausted"] is True
    assert held["message"].startswith("your code used up the 128 processes and threads it may have at once")
    assert spawn()["grader_fault"] is True  # not a want of anything the submission could hold
    memory = spawn()
    assert memory["exhausted"] is True and "memory its processes may hold together (1024 MB)" in memory["message"]
    z.workers.clear()  # the made-up worker is no process to kill
    assert z.end()["ok"] is True
    assert spawn()["grader_fault"] is True  # the next submission's code has not run yet
    for sock in (ours, theirs, spare):
        sock.close()
