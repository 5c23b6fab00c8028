"""nbgrader's grading service (grader/platforms/notebook_service.py): one class, one seed, whatever the notebook asks."""
import types

import pytest

from grader.platforms import notebook_service as kernel_service


class _Kernel:
    """A kernel as the service's request reader leaves one: its folder, its lock, the answers it was sent."""

    def __init__(self, cwd):
        import threading

        self.cwd, self.closed, self.waiting, self.lock, self.sent = cwd, False, 1, threading.Lock(), []

    def done(self, connection):
        pass


def _job(course, kernel, request, monkeypatch):
    sent = kernel.sent
    monkeypatch.setattr(kernel_service.protocol, "send", lambda connection, data, timeout: sent.append(data))
    kernel.waiting = 1
    return kernel_service.job_of((kernel, request, None), course)


def test_a_notebooks_own_seed_is_ignored_and_every_student_gets_the_class_seed(course, tmp_path, monkeypatch):
    monkeypatch.delenv("GRADE_SEED", raising=False)
    kernel = _Kernel(tmp_path)
    seeds = []
    for seed in (7, 123456, None):  # check("softmax", seed=7) in a handed-in notebook: a seed that suits it
        request = {"exercise": "softmax", "cells": ["x = 1"], **({"seed": seed} if seed is not None else {})}
        seeds.append(_job(course, kernel, request, monkeypatch).seed)
    fixed = kernel_service.class_seed(course, course.assignment("01_attention_basics"))
    assert seeds == [fixed] * 3 and kernel.waiting == 0
    assert fixed != kernel_service.class_seed(course, course.assignment("02_self_attention"))  # per assignment
    monkeypatch.setenv("GRADE_SEED", "8121")  # the instructor's, where given
    assert _job(course, kernel, {"exercise": "softmax", "cells": [], "seed": 7}, monkeypatch).seed == 8121
    assert kernel.sent == []  # nothing answered before it is graded
    for request in ({"exercise": "no_such_exercise", "cells": []}, {"exercise": "softmax", "cells": [1]}, [1]):
        assert _job(course, kernel, request, monkeypatch) is None  # answered at once, never graded
    assert len(kernel.sent) == 3


def _result(graded):
    return types.SimpleNamespace(assignments=[types.SimpleNamespace(exercises=[graded])], seed=1, device="cpu",
                                 duration_s=0.1)


def test_a_wrong_pictured_exercise_sends_its_figure_to_the_notebook_and_a_right_one_none(monkeypatch):
    """Issue 36: nbgrader's grading service drew nothing in check(): it sent the text and points only."""
    figure = {"title": "attention_weights", "theirs": [[1.0]], "right": [[0.5]]}
    monkeypatch.setattr("grader.platforms.notebook_grading.describe", lambda graded, result: "")
    wrong = types.SimpleNamespace(score=0.0, status="failed", figure=figure)
    assert kernel_service.reply_of(_result(wrong))["figure"] == figure
    right = types.SimpleNamespace(score=1.0, status="passed", figure=figure)
    assert kernel_service.reply_of(_result(right))["figure"] is None


def test_the_sandboxed_kernels_environment_keeps_its_banner_and_fontconfig_quiet(tmp_path):
    """Issue 35: in the sandbox's clean environment ipykernel knew no parent (its "Ctrl-C will not work"
    banner) and fontconfig no config ("Fontconfig error" as matplotlib built its font cache)."""
    import os
    import shutil
    import subprocess

    import pytest

    from grader.sandbox.kernel_sandbox import quiet_env

    env = quiet_env()
    assert env["JPY_PARENT_PID"] == "1" and env["XDG_CACHE_HOME"].startswith("/tmp/")
    if shutil.which("fc-list") is None or "FONTCONFIG_FILE" not in env:
        pytest.skip("no fontconfig, or none of its templates, on this machine")
    done = subprocess.run(["fc-list", "--format=%{file}\\n"], env={"PATH": os.environ["PATH"], "HOME": str(tmp_path),
                          **env, "XDG_CACHE_HOME": str(tmp_path / "cache")}, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == ""



def _serving(course, monkeypatch, answer):
    """The service on a control socket of this test's (``ask`` sends the kernel manager's requests), its
    grader a stand-in that needs no sandbox (it records itself and its close in the list returned) and grades
    each job of its stream by ``answer(job)``, whose reply goes back as it is: (ask, the control socket, the
    serving thread, the graders)."""
    import socket
    import threading

    from grader.inside import protocol

    graders = []

    class Grader:
        def __init__(self, course, **_):
            graders.append(self)

        def grade_each(self, jobs, assignments, *, seed, prepare, report, **_):
            for job in jobs:
                report(job, dict(answer(job), grader=id(self), seed=seed))

        def cancel(self, submission):
            pass

        def close(self):
            graders.append("closed")

    monkeypatch.setattr("grader.grading.grader.Grader", Grader)
    monkeypatch.setattr(kernel_service, "reply_of", lambda reply: reply)
    monkeypatch.setattr("grader.platforms.notebook_grading.kept_given", lambda *_: set())  # nothing kept
    monkeypatch.setattr("grader.platforms.notebook_grading.the_cells_exercise", lambda reply, *_: reply)
    ours, theirs = socket.socketpair()
    serving = threading.Thread(target=kernel_service.serve, args=(theirs,), kwargs={"course": course})
    serving.start()

    def ask(message):
        protocol.send(ours, protocol.encode(message), timeout=10)
        return protocol.decode(protocol.recv(ours, limit=1 << 16, timeout=10), limit=0)

    return ask, ours, serving, graders


def test_one_service_answers_each_kernel_on_its_own_socket_for_its_own_folder(course, tmp_path, monkeypatch):
    """The kernels of one nbgrader run share one service (its grader warm from one notebook to the next):
    each kernel's socket answers for the notebook folder its kernel manager named, a kernel that connects
    and says nothing holds up no other kernel, and a closed kernel's socket is gone with it."""
    import socket
    import time

    from grader.inside import protocol

    ask, ours, serving, graders = _serving(course, monkeypatch, lambda job: {
        "ok": True, "text": f"{job.exercise} for {job.kernel.cwd.name}", "points": 1.0})

    def check(path, exercise):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.connect(path)
            protocol.send(connection, protocol.encode({"exercise": exercise, "cells": []}), timeout=10)
            return protocol.decode(protocol.recv(connection, limit=1 << 20, timeout=10), limit=0)

    paths = {}
    for name in ("ada", "bo"):
        (tmp_path / name).mkdir()
        paths[name] = str(tmp_path / name / "grade.sock")
        assert ask({"open": paths[name], "cwd": f"/course/submitted/{name}/01_attention_basics"}) == {"ok": True}
    first = check(paths["ada"], "attention_scores")
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    silent.connect(paths["ada"])  # ada's kernel now says nothing: read apart from the grading
    started = time.monotonic()
    second = check(paths["bo"], "softmax")
    assert time.monotonic() - started < 5  # bo is answered at once
    assert first["text"] == "attention_scores for 01_attention_basics" and second["text"].startswith("softmax")
    assert first["grader"] == second["grader"] and len(graders) == 1  # one grader for both kernels
    assert first["seed"] == second["seed"] == kernel_service.class_seed(course, course.assignment("01_attention_basics"))
    started = time.monotonic()
    assert ask({"close": paths["ada"]}) == {"ok": True}  # its silent connection ends with it
    assert time.monotonic() - started < 5 and not (tmp_path / "ada" / "grade.sock").exists()
    with pytest.raises(OSError):
        check(paths["ada"], "softmax")
    assert check(paths["bo"], "softmax")["ok"]
    assert ask({"nonsense": 1})["ok"] is False
    silent.close()
    ours.close()  # the kernel manager's process is gone: the service ends, its grader closed
    serving.join(timeout=10)
    assert not serving.is_alive() and graders[-1] == "closed"


def test_an_exercise_the_grader_could_not_grade_gives_nbgrader_no_points():
    """Red team round 18: checks made to end as grader-error (an undecodable reply) left the rest scaled to
    full points, and the graded cell printed and returned them: it gives 0 now, and says why."""
    from grader.results import CheckOutcome, ExerciseResult

    checks = [CheckOutcome("a", 1.0, "passed"), *(CheckOutcome("b", 1.0, "grader-error") for _ in range(4))]
    graded = ExerciseResult(name="softmax", max_score=10.0, checks=checks)
    assert graded.score == 10.0 and graded.status == "grader-error"  # the score alone counts the checks that ran
    reply = kernel_service.reply_of(_result(graded))
    assert reply["points"] == 0.0 and "0/10 points, grader-error" in reply["text"], reply["text"]


def test_a_kernel_closed_while_its_requests_wait_is_closed_at_once_and_they_are_never_graded(course, tmp_path,
                                                                                          monkeypatch):
    """Red team round 18: a close waited behind the kernel's queued requests (30 s, then the service was
    killed). The kernel manager is answered on its own thread now; what the kernel left waiting is dropped."""
    import socket
    import time

    from grader.inside import protocol

    graded = []

    def answer(job):
        graded.append(job.exercise)
        time.sleep(2.0)
        return {"ok": True, "text": "", "points": 0.0}

    ask, ours, serving, _ = _serving(course, monkeypatch, answer)
    path = str(tmp_path / "grade.sock")
    assert ask({"open": path, "cwd": str(tmp_path)})["ok"]
    connections = []
    for exercise in ("softmax_naive", "softmax", "attention_scores"):
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.connect(path)
        protocol.send(connection, protocol.encode({"exercise": exercise, "cells": []}), timeout=10)
        connections.append(connection)
        time.sleep(0.2)
    started = time.monotonic()
    assert ask({"close": path}) == {"ok": True}
    assert time.monotonic() - started < 1.0
    time.sleep(2.5)
    assert graded == ["softmax_naive"]
    for connection in connections:
        connection.close()
    ours.close()
    serving.join(timeout=10)
    assert not serving.is_alive()


SLOW_SOFTMAX = """
import time, torch
def softmax(x, dim=-1):
    time.sleep(4)
    return torch.softmax(x, dim=dim)
"""
RIGHT_SOFTMAX = """
import torch
def softmax(x, dim=-1):
    shifted = x - x.amax(dim=dim, keepdim=True).nan_to_num(neginf=0.0)
    exp = shifted.exp()
    return exp / exp.sum(dim=dim, keepdim=True).clamp_min(1e-30)
"""


@pytest.mark.slow
def test_a_check_whose_kernel_hangs_up_is_cut_short_and_the_next_students_check_waits_for_nothing(course, tmp_path,
                                                                                               monkeypatch):
    """Red team round 19 (a11, a03): the service graded a request to its end after its kernel had hung up (a
    notebook's parting request, or a slow last check past nbgrader's cell timeout): about 120 s, during which
    every later student's check() waited past its cell's timeout and their notebooks failed. A job whose
    kernel hangs up is cut short now (Grader.cancel): the next student's check is answered within seconds."""
    import socket
    import threading
    import time

    from grader.grading.grader import Grader
    from grader.inside import protocol

    monkeypatch.setenv("GRADE_DEVICE", "cpu")
    assignment = course.assignment("01_attention_basics")

    class Kernel:
        def __init__(self, cwd):
            self.cwd = cwd

        def done(self, connection):
            connection.close()

    ends, jobs = [], []
    for cells in (["", SLOW_SOFTMAX], ["", RIGHT_SOFTMAX]):  # In[0] is always empty
        ours, theirs = socket.socketpair()
        ends.append(theirs)
        jobs.append(kernel_service._Job(Kernel(tmp_path / assignment.id), ours, cells,
                                        "softmax", assignment, 3))
    grader = Grader(course, device="cpu", batch=True)
    try:
        threading.Timer(3.0, ends[0].close).start()  # the first kernel hangs up while its check is graded
        started = time.monotonic()
        kernel_service.grade(iter(jobs), course=course, grader=grader, seed=3)
        took = time.monotonic() - started
    finally:
        grader.close()
    reply = protocol.decode(protocol.recv(ends[1], limit=1 << 20, timeout=5), limit=0)
    assert reply["ok"] and reply["points"] == 25.0, reply
    assert took < 25, took  # graded to its end, the slow one alone takes minutes


@pytest.mark.slow
@pytest.mark.parametrize("kept,assignment_id,score", [
    ("round29a_red_team/N1__attack__attention_basics", "01_attention_basics", 85.71),
    ("round29b_red_team/M3__attack__self_attention", "02_self_attention", 85.0)])
def test_the_services_cells_add_up_to_grade_check_where_a_helper_is_wrong_only_on_its_users_calls(
        course, tmp_path, monkeypatch, kept, assignment_id, score):
    """Red team round 30 (S1, S2): rounds 29a and 29b were fixed in the kernel's own graded cells
    (notebook_grading.grade_cells), but nbgrader's sandboxed kernels are graded by this service, which graded each
    cell alone: a softmax wrong only on the square inputs simple_self_attention gives it kept every case there and
    was charged nowhere (100 where `grade check` gives 85.71; 02's three users of one helper 95.71 against 85). The
    service grades a cell with kept cases again beside its helpers and carries its share, read from the kernel's
    notebook graded whole, as the kernel's path does: its cells add up to `grade check` (what
    test_notebook_checks.py's N1 and M3 cases read for that path; 85.71 and 85 on seed 3)."""
    import json
    import socket
    from pathlib import Path

    from grader.grading.grader import Grader
    from grader.inside import protocol

    root = Path(__file__).resolve().parents[3]
    source = (root / "tests" / "corpus" / "heldout" / f"{kept}.py.txt").read_text()
    monkeypatch.setenv("GRADE_DEVICE", "cpu")
    assignment = course.assignment(assignment_id)
    cwd = tmp_path / assignment.id
    cwd.mkdir()
    (cwd / assignment.notebook).write_text(json.dumps({  # nbgrader's submitted file, beside the kernel
        "cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": source}],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))

    class Kernel:
        def __init__(self, cwd):
            self.cwd = cwd

        def done(self, connection):
            connection.close()

    ends, jobs = [], []
    for exercise in assignment.exercises:
        ours, theirs = socket.socketpair()
        ends.append(theirs)
        jobs.append(kernel_service._Job(Kernel(cwd), ours, ["", source], exercise, assignment, 3))
    grader = Grader(course, device="cpu", batch=True)
    try:
        kernel_service.grade(iter(jobs), course=course, grader=grader, seed=3)
    finally:
        grader.close()
    replies = [protocol.decode(protocol.recv(end, limit=1 << 20, timeout=5), limit=0) for end in ends]
    assert all(reply["ok"] for reply in replies), replies
    assert abs(sum(reply["points"] for reply in replies) - score) <= 0.05, [r["points"] for r in replies]
    # (01's simple_self_attention loses its cases, its softmax having lost nothing; 02's users carry their shares)
    assert any("this cell carries" in reply["text"] for reply in replies) == (assignment_id == "02_self_attention")
