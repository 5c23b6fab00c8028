"""The boundary around a submission (grader/sandbox/confine.py, zygote.py, cgroups.py), tried as an attacker.

Each attack is graded in every mode this machine offers: ``separate-user`` (root: bubblewrap, a uid
per submission, a cgroup per submission), ``user-namespace`` (what an ordinary user gets: the same
code path as without root, bubblewrap making a user namespace) and ``same-user`` (no sandbox). The
attacks must gain nothing in the first two; in the third some succeed, as docs/security.md's table says,
which also shows that each probe really tries.
"""
from __future__ import annotations

import ast
import os
import socket
import sys
from pathlib import Path

import pytest

from grader.config import load_course
from grader.sandbox.confine import Confinement, describe, find_bwrap, plan, prepare_workdir, runtime_paths
from grader.errors import IsolationError
from grader.grading.grader import Grader
from grader.submission import resolve_submission

ROOT = Path(__file__).resolve().parents[3]
SOLUTION = (ROOT / "solutions" / "01_attention_basics" / "attention_basics.py").read_text()
ROOTED = os.geteuid() == 0
SANDBOX = plan("auto").sandboxed


def modes() -> list[str]:
    found = ["same-user", "separate-user-only"] if ROOTED else ["same-user"]
    if SANDBOX:
        found.append("user-namespace")
        if ROOTED:
            found.append("separate-user")
    return found


def confinement(mode: str) -> Confinement:
    if mode in ("same-user", "separate-user-only"):  # the latter: root where no sandbox can be made (Docker)
        return Confinement(mode)
    if mode == "user-namespace":  # as an ordinary user: bubblewrap makes a user namespace
        return Confinement("user-namespace", find_bwrap())
    return plan("auto")


@pytest.fixture(scope="module")
def course():
    return load_course(ROOT)


@pytest.fixture(scope="module", params=["same-user", "separate-user-only", "user-namespace", "separate-user"])
def grader(request, course):
    if request.param not in modes():
        pytest.skip(f"{request.param}: not available on this machine (no bubblewrap or not root)")
    instance = Grader(course, device="cpu", confinement=confinement(request.param))
    yield request.param, instance
    instance.close()


# The probe: student code that tries each attack at import and tells what it got in the message of
# an exception, which the feedback shows (the student's own words are the one channel out).
PROBE = """
import os, socket, signal
found = {{}}
def attempt(name, action):
    try:
        found[name] = repr(action())[:200]
    except BaseException as exc:
        found[name] = 'refused: ' + type(exc).__name__
attempt('solution', lambda: open({solution!r}).read()[:40])
attempt('suite', lambda: open({suite!r}).read()[:40])
attempt('git', lambda: os.listdir({git!r})[:3])
attempt('environ', lambda: open('/proc/{grader_pid}/environ', 'rb').read()[:40])
attempt('kill_grader', lambda: os.kill({grader_pid}, 0))
attempt('write_course', lambda: open({course_file!r}, 'w').write('x'))
attempt('network', lambda: socket.create_connection(('127.0.0.1', {port}), timeout=2).close())
attempt('processes', lambda: len([p for p in os.listdir('/proc') if p.isdigit()]))
attempt('uid', lambda: os.getuid())
import resource
attempt('nproc', lambda: resource.getrlimit(resource.RLIMIT_NPROC)[0])
attempt('fsize', lambda: resource.getrlimit(resource.RLIMIT_FSIZE)[0])
attempt('quota', lambda: os.statvfs('.').f_blocks * os.statvfs('.').f_frsize)
def softmax(x, dim=-1):
    raise RuntimeError('PRO' + 'BE:' + repr(found) + ':PRO' + 'BE')
"""


def probe(grader, tmp_path, name="mallory") -> dict:
    mode, instance = grader
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    course_file = ROOT / f"forged-by-{name}-{os.getpid()}"
    source = SOLUTION + PROBE.format(
        solution=str(ROOT / "solutions" / "01_attention_basics" / "attention_basics.py"),
        suite=str(ROOT / "suites" / "hidden" / "test_01_attention_basics.py"), git=str(ROOT / ".git"),
        grader_pid=os.getpid(), course_file=str(course_file), port=listener.getsockname()[1])
    path = tmp_path / name / "attention_basics.py"
    path.parent.mkdir(parents=True)
    path.write_text(source)
    course = instance.course
    try:
        result = instance.grade(resolve_submission(path, course), (course.assignment("01_attention_basics"),), seed=3)
    finally:
        listener.close()
        written = course_file.exists()
        course_file.unlink(missing_ok=True)
    feedback = {e.name: e for e in result.assignments[0].exercises}["softmax"].feedback
    found = ast.literal_eval(feedback.split("PROBE:")[1].split(":PROBE")[0])
    found["wrote_course"] = written
    found["isolation"] = result.isolation
    found["score"] = result.score
    return found


def test_a_sandboxed_submission_reads_signals_writes_and_connects_to_nothing(grader, tmp_path):
    mode, _ = grader
    found = probe(grader, tmp_path)
    assert found["isolation"] == mode
    # all but its softmax, which raises on every case: simple_self_attention, which calls it, is verified right
    # with a right softmax in its place (grader/grading/stand_ins.py), so the raise costs once
    assert found["score"] == 75
    secrets = ("solution", "suite", "git", "environ", "kill_grader")
    if mode == "same-user":  # what docs/security.md's table says is open without a sandbox, shown to be open
        assert not found["solution"].startswith("refused") and found["kill_grader"] == "None"
        return
    if mode == "separate-user-only":  # another uid: no signal, no write; files others may read stay readable
        assert found["kill_grader"] == "refused: PermissionError" and found["environ"].startswith("refused")
        assert not found["wrote_course"] and int(found["uid"]) >= 2_000_000_000
        return
    for name in secrets:
        assert found[name].startswith("refused"), (name, found[name])
    assert found["write_course"] == "refused: OSError" or found["write_course"].startswith("refused")
    assert not found["wrote_course"]
    assert found["network"].startswith("refused")
    assert found["processes"] == "1"  # its own PID namespace: it sees itself, PID 1, and nothing else


def test_every_worker_has_a_process_limit_a_file_size_limit_and_its_working_folder_a_quota(grader, tmp_path):
    """Issue 33: as root, 128 processes and threads for the submission's uid; for an ordinary user, as many
    in the user namespace of its sandbox, where the kernel (5.14 and later) counts them apart from the
    grader's; in every mode no file larger than the quota (RLIMIT_FSIZE), and in a sandbox a working
    folder of that size, the sandbox's own. Without a sandbox nor root (same-user) the process limit
    would count the grader's own processes too: none is set there (docs/security.md)."""
    from grader.inside.zygote import NPROC_LIMIT, counts_per_user_namespace
    from grader.sandbox.confine import WORK_QUOTA

    mode, _ = grader
    found = probe(grader, tmp_path, name="counter")
    assert int(found["fsize"]) == WORK_QUOTA
    if mode in ("separate-user", "separate-user-only"):
        assert int(found["nproc"]) == NPROC_LIMIT
    elif mode == "user-namespace" and counts_per_user_namespace():
        assert NPROC_LIMIT < int(found["nproc"]) <= NPROC_LIMIT + 16  # and the sandbox's own: bubblewrap's, the zygote
    if mode in ("separate-user", "user-namespace"):
        assert int(found["quota"]) == WORK_QUOTA


@pytest.mark.skipif(ROOTED or not SANDBOX, reason="an ordinary user's sandbox (as root, uid 0 is no user's limit)")
def test_as_an_ordinary_user_a_process_bomb_stops_at_its_sandboxs_limit_and_spares_the_next_submission(course,
                                                                                                      tmp_path):
    """Issue 33: without root there is no cgroup and no uid of its own, but RLIMIT_NPROC, set in the user
    namespace bubblewrap made for the sandbox, counts its processes alone: a submission that spawns
    processes until it cannot is stopped there (its own EAGAIN), and the next submission is graded as
    usual."""
    from grader.inside.zygote import NPROC_LIMIT

    instance = Grader(course, device="cpu", confinement=confinement("user-namespace"))
    try:
        bomb = tmp_path / "mallory" / "attention_basics.py"
        bomb.parent.mkdir()
        bomb.write_text(SOLUTION + """
import os
_spawned = 0
try:
    while _spawned < 5000:
        os.posix_spawn('/bin/sleep', ['sleep', '600'], {})
        _spawned += 1
except OSError as exc:
    _stopped = exc.errno
def softmax(x, dim=-1):
    raise RuntimeError('BO' + 'MB:' + repr((_spawned, _stopped)) + ':BO' + 'MB')
""")
        result = instance.grade(resolve_submission(bomb, course), (course.assignment("01_attention_basics"),), seed=3)
        feedback = {e.name: e for e in result.assignments[0].exercises}["softmax"].feedback
        spawned, stopped = ast.literal_eval(feedback.split("BOMB:")[1].split(":BOMB")[0])
        assert spawned < NPROC_LIMIT and stopped == 11, (spawned, stopped)  # EAGAIN
        assert result.score == 75  # softmax; simple_self_attention, which calls it, is right with a right softmax
        honest = tmp_path / "alice" / "attention_basics.py"
        honest.parent.mkdir()
        honest.write_text(SOLUTION)
        after = instance.grade(resolve_submission(honest, course), (course.assignment("01_attention_basics"),), seed=3)
        assert after.score == 100
    finally:
        instance.close()


@pytest.mark.skipif(not (ROOTED and SANDBOX), reason="a uid per submission needs root")
def test_as_root_no_two_submissions_share_a_uid(course, tmp_path):
    instance = Grader(course, device="cpu", confinement=plan("auto"))
    try:
        first = probe(("separate-user", instance), tmp_path, "first")
        second = probe(("separate-user", instance), tmp_path, "second")
    finally:
        instance.close()
    assert int(first["uid"]) != int(second["uid"]) and min(int(first["uid"]), int(second["uid"])) > 1_000_000


def test_uids_of_grading_processes_alive_together_never_collide_on_any_pid_max():
    """Issue 21: a block of uids per pid, over the kernel's whole pid range (PID_MAX_LIMIT, 2**22): pids
    65536 apart (which shared uids before) get disjoint blocks, all above FIRST_UID and below the
    reserved 2**32 - 1; a pid past the range is refused rather than given a shared uid."""
    from grader.sandbox.confine import FIRST_UID, PID_LIMIT, UIDS_PER_PROCESS, submission_uid

    blocks = {pid: {submission_uid(pid) for _ in range(UIDS_PER_PROCESS)} for pid in (1, 300, 65836, PID_LIMIT - 1)}
    assert all(len(uids) == UIDS_PER_PROCESS for uids in blocks.values())
    assert not blocks[300] & blocks[65836]
    assert min(min(u) for u in blocks.values()) > FIRST_UID and max(max(u) for u in blocks.values()) < 2**32 - 1
    with pytest.raises(IsolationError):
        submission_uid(PID_LIMIT)


MEMORY_HOG = """
import os, time
_seen = []
def attention_scores(inputs):
    if _seen:  # once a worker: each round holds 3.6 GiB for 3 s
        raise RuntimeError(_seen[0])
    children = []
    for _ in range(3):  # three processes of 1.2 GiB each, under a limit of 2 GiB for the submission
        pid = os.fork()
        if pid == 0:
            block = bytearray(1200 << 20)
            for i in range(0, len(block), 4096):
                block[i] = 1
            time.sleep(3)
            os._exit(0)
        children.append(pid)
    codes = [os.waitpid(pid, 0)[1] for pid in children]
    _seen.append(f'SURVI' f'VED:{sum(1 for code in codes if code == 0)}')
    raise RuntimeError(_seen[0])
"""


@pytest.mark.slow
@pytest.mark.skipif(not (ROOTED and SANDBOX and plan("auto").cgroups), reason="no per-submission cgroup here")
def test_memory_is_limited_per_submission_not_per_process(tmp_path):
    folder = tmp_path / "course"
    folder.mkdir()
    text = (ROOT / "course.toml").read_text().replace("memory_mb = 6144", "memory_mb = 2048")
    (folder / "course.toml").write_text(text)
    for name in ("solutions", "suites"):
        (folder / name).symlink_to(ROOT / name)
    course = load_course(folder)
    instance = Grader(course, device="cpu")
    path = tmp_path / "hog" / "attention_basics.py"
    path.parent.mkdir()
    path.write_text(SOLUTION + MEMORY_HOG)
    try:
        result = instance.grade(resolve_submission(path, course), (course.assignment("01_attention_basics"),), seed=3,
                                exercises=("attention_scores",))  # the exercises that use it hog again (a minute)
        bystander = instance.grade(resolve_submission(ROOT / "solutions" / "01_attention_basics", course),
                                   (course.assignment("01_attention_basics"),), seed=3)
    finally:
        instance.close()
    exercise = {e.name: e for e in result.assignments[0].exercises}["attention_scores"]
    survived = int(exercise.feedback.split("SURVIVED:")[1][0]) if "SURVIVED:" in exercise.feedback else 0
    assert survived <= 1, exercise.feedback  # 3 x 1.2 GiB never fit in 2 GiB together
    assert bystander.score == 100


def test_the_plan_follows_course_toml_and_names_what_does_not_hold(monkeypatch):
    never = plan("never")
    assert never.mode == "same-user" and not never.sandboxed and "never" in never.problems[0]
    monkeypatch.setattr("grader.sandbox.confine.find_bwrap", lambda: None)
    missing = plan("auto")
    assert missing.mode == ("separate-user-only" if ROOTED else "same-user") and "bubblewrap" in missing.problems[0]
    assert not missing.sandboxed
    with pytest.raises(IsolationError, match="required"):
        plan("required")


@pytest.mark.skipif(not SANDBOX, reason="no sandbox on this machine")
def test_where_bubblewrap_works_auto_and_required_sandbox_student_code():
    for setting in ("auto", "required"):
        planned = plan(setting)
        assert planned.sandboxed and planned.mode == ("separate-user" if ROOTED else "user-namespace")


def test_the_instructors_log_says_how_student_code_runs():
    line = describe(Confinement(problems=("bubblewrap (bwrap) is not installed", "b")))
    assert "no sandbox" in line and "not protected (2): 1) bubblewrap (bwrap) is not installed; 2) b" in line
    assert "uid of its own" in describe(Confinement("separate-user", "/usr/bin/bwrap"))
    assert "user namespaces" in describe(Confinement("user-namespace", "/usr/bin/bwrap"))


def test_the_banner_names_every_protection_that_does_not_hold_not_a_count_of_more():
    """Issue 45: "not protected: X (and 1 more)" never said what the one more was."""
    problems = ("bubblewrap (bwrap) is not installed: no sandbox", "not root: submissions share the grader's uid",
                "no cgroup v2: memory is limited per process")
    line = describe(Confinement(problems=problems))
    assert "more" not in line and "\n" not in line
    assert "not protected (3): 1) bubblewrap (bwrap) is not installed: no sandbox; 2) not root: submissions " \
           "share the grader's uid; 3) no cgroup v2: memory is limited per process" in line
    assert describe(Confinement(problems=problems[:1])).endswith(f"; not protected: {problems[0]}")


def test_the_sandbox_view_holds_the_runtime_but_never_the_course_root(tmp_path):
    """An editable install puts the course root on sys.path; it holds solutions/, so it stays out."""
    blocked = (str(ROOT / "solutions"), str(ROOT / "suites"))
    paths = runtime_paths(blocked)
    import torch

    assert any(Path(torch.__file__).resolve().is_relative_to(p) for p in paths)
    for path in paths:
        assert not (ROOT / "solutions").resolve().is_relative_to(path), path
        assert not Path(path).resolve().is_relative_to(ROOT / "solutions")


def test_another_checkout_of_a_course_on_pythonpath_is_never_shown_nor_one_just_below(tmp_path, monkeypatch):
    """Red team round 18: the grader run from a checkout (PYTHONPATH) that holds its own copy of the course,
    grading a course copied elsewhere: the view bound the checkout whole, solutions/ and suites/ in it,
    and a notebook read the reference into its feedback. A course checkout (a course.toml) on the path is
    not shown; one just below a folder that is shown is masked."""
    from grader.sandbox.confine import masked_paths

    graded = tmp_path / "semester" / "course"
    checkout, parent = tmp_path / "dev", tmp_path / "shared"
    for course in (graded, checkout, parent / "course-copy", parent / "courses" / "attn"):
        (course / "solutions").mkdir(parents=True)
        (course / "course.toml").write_text("")
    (parent / "helpers.py").write_text("")
    monkeypatch.setenv("PYTHONPATH", f"{checkout}:{parent}")
    monkeypatch.setattr(sys, "path", [*sys.path, str(checkout), str(parent)])
    blocked = (str(graded / "solutions"),)
    paths = runtime_paths(blocked)
    assert str(checkout) not in paths and str(parent) in paths  # a folder on PYTHONPATH is still shown
    masked = masked_paths(paths, blocked)
    assert {str(parent / "course-copy"), str(parent / "courses" / "attn")} <= set(masked)  # at any depth (re-test)


def test_a_virtualenv_is_shown_as_its_interpreter_and_libraries_never_its_src_checkouts():
    """Red team round 18, re-test: `pip install -e git+URL` checks a course out into <venv>/src, and the
    view bound the virtualenv whole. Its bin/, lib/ and pyvenv.cfg are shown, nothing else of it."""
    if sys.prefix == sys.base_prefix:
        pytest.skip("not run from a virtualenv")
    paths = runtime_paths(())
    prefix = os.path.realpath(sys.prefix)
    assert prefix not in paths and os.path.join(prefix, "pyvenv.cfg") in paths
    assert all(p == prefix or not p.startswith(prefix + os.sep) or p.split(os.sep)[len(prefix.split(os.sep))]
               in ("bin", "lib", "lib64", "pyvenv.cfg") for p in paths), paths


@pytest.mark.skipif(not ROOTED, reason="handing a folder to another uid needs root")
def test_the_prepared_working_copy_belongs_to_the_submission_alone_and_keeps_no_link(tmp_path):
    copy = tmp_path / "copy"
    (copy / "a").mkdir(parents=True)
    (copy / "a" / "m.py").write_text("x = 1\n")
    (copy / "a" / "link").symlink_to("/etc/passwd")
    prepare_workdir(str(copy), 2_000_000_123, 65534)
    st = (copy / "a" / "m.py").stat()
    assert (st.st_uid, st.st_mode & 0o777) == (2_000_000_123, 0o600)
    assert not (copy / "a" / "link").exists() and not (copy / "a" / "link").is_symlink()
    assert (copy.stat().st_mode & 0o777) == 0o700


def test_two_graders_of_one_pid_number_in_two_pid_namespaces_never_share_a_block_of_uids(tmp_path):
    """Red team (issue 33): two root graders in PID namespaces of their own both had pid 7, so both gave
    their submissions uids of block 7. The block is now held by a lock for the machine; the second takes
    a spare one."""
    import subprocess
    import sys

    from grader.sandbox import confine

    pid = 4_000_000  # a pid no process of this machine has now (pid_max is lower here)
    holder = subprocess.Popen([sys.executable, "-c", f"""
import fcntl, os, sys, time
fd = os.open({str(tmp_path / str(pid))!r}, os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(60)
"""], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        block = confine._claim_block(pid, tmp_path)
        assert block != pid and confine.PID_LIMIT <= block < confine.UID_BLOCKS
        assert confine._claim_block(pid, tmp_path) == block  # held for this process's life
        assert confine._claim_block(pid + 1, tmp_path) == pid + 1  # a free block is the pid's own
        assert confine.FIRST_UID + (confine.UID_BLOCKS + 1) * confine.UIDS_PER_PROCESS > 2**32 - 1
    finally:
        holder.kill()
        confine._CLAIMED.pop(pid, None), confine._CLAIMED.pop(pid + 1, None)
