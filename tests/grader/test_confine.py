"""Running student code as an unprivileged user (grader/confine.py).

Each case forks a child, as the zygote forks a worker, confines it and reports what it could and
could not do through a pipe. Most need root and are skipped, and shown as skipped, elsewhere.
"""
from __future__ import annotations

import errno
import json
import os
import pwd
import select
import shutil
import signal
import stat
import sys
import tempfile
import time

import pytest
import torch  # noqa: F401 - loaded before the fork, as in the zygote

from grader.confine import (
    NOBODY, ConfinementError, can_drop_privileges, close_fds, confinement_problems, drop_privileges,
    kill_all_of, prepare_workdir, readable_by, unreadable_runtime,
)

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="needs root: only root can run code as another user")
UNREADABLE_RUNTIME = unreadable_runtime() if os.geteuid() == 0 else []


# --- helpers ---------------------------------------------------------------------------------------
_report = {"fd": -1}  # in a child: the pipe it reports on, which close_fds must keep, as a worker its socket


def in_child(function, *args, timeout: float = 10.0):
    """Run ``function(*args)`` in a forked child; its return value (JSON), or the exception it raised."""
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # never returns into pytest
        try:
            os.close(reader)
            _report["fd"] = writer
            try:
                result = {"value": function(*args)}
            except BaseException as exc:  # noqa: BLE001
                result = {"raised": type(exc).__name__, "message": str(exc)}
            data = json.dumps(result, default=repr).encode()
            while data:
                data = data[os.write(writer, data):]
        finally:
            os._exit(0)
    os.close(writer)
    chunks, deadline = [], time.monotonic() + timeout
    try:
        while True:
            ready, _, _ = select.select([reader], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                os.kill(pid, signal.SIGKILL)
                raise AssertionError(f"the child did not finish within {timeout} s")
            chunk = os.read(reader, 65536)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(reader)
        os.waitpid(pid, 0)
    result = json.loads(b"".join(chunks))
    if "raised" in result:
        return result
    return result["value"]


def attempt(action) -> str:
    """'ok', or the name of the errno the action failed with."""
    try:
        action()
        return "ok"
    except OSError as exc:
        return errno.errorcode.get(exc.errno, str(exc.errno)) if exc.errno else type(exc).__name__
    except ImportError as exc:
        return type(exc).__name__


def unused_uid() -> int:
    """A uid with no account and, we trust, no processes: a dedicated uid as a grader would use."""
    uid = 3_000_000 + os.getpid() % 100_000
    while True:
        try:
            pwd.getpwuid(uid)
        except KeyError:
            return uid
        uid += 1


@pytest.fixture
def scratch():
    """A folder under /tmp, where the unprivileged user can reach (pytest's tmp_path is root's 0700)."""
    folder = tempfile.mkdtemp(prefix="confine-test-")
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def secret(scratch):
    """A root-only 0600 file, in a folder everyone may enter."""
    os.chmod(scratch, 0o755)
    path = os.path.join(scratch, "reference.py")
    with open(path, "w") as stream:
        stream.write("ANSWER = 42\n")
    os.chmod(path, 0o600)
    return path


def _with_dropped(probe, *args):
    drop_privileges()
    return probe(*args)


# --- what the worker can no longer do ---------------------------------------------------------------
@ROOT_ONLY
def test_a_dropped_worker_cannot_read_write_signal_or_inspect_root(secret, scratch):
    parent = os.getpid()

    def probe():
        def create():
            with open(os.path.join(scratch, "forged.json"), "x"):
                pass

        return {
            "ids": [os.getresuid(), os.getresgid(), os.getgroups()],
            "read 0600 file": attempt(lambda: open(secret).read()),
            "write root's folder": attempt(create),
            "kill parent": attempt(lambda: os.kill(parent, signal.SIGTERM)),
            "parent environ": attempt(lambda: open(f"/proc/{parent}/environ", "rb").read()),
            "parent mem": attempt(lambda: open(f"/proc/{parent}/mem", "rb").read(1)),
            "parent fds": attempt(lambda: os.listdir(f"/proc/{parent}/fd")),
            "parent cmdline": attempt(lambda: open(f"/proc/{parent}/cmdline", "rb").read()),
            "setuid(0)": attempt(lambda: os.setuid(0)),
        }

    seen = in_child(_with_dropped, probe)
    assert seen["ids"] == [[NOBODY] * 3, [NOBODY] * 3, []]
    assert seen["read 0600 file"] == "EACCES"
    assert seen["write root's folder"] == "EACCES"
    assert seen["kill parent"] == "EPERM"
    assert seen["parent environ"] == seen["parent mem"] == seen["parent fds"] == "EACCES"
    assert seen["parent cmdline"] == "ok"  # /proc still shows command lines: see the module's docstring
    assert seen["setuid(0)"] == "EPERM"
    assert not os.path.exists(os.path.join(scratch, "forged.json"))


@ROOT_ONLY
def test_no_capabilities_and_no_new_privileges_remain():
    def probe():
        with open("/proc/self/status") as status:
            fields = dict(line.split(":", 1) for line in status)
        return {name: fields[name].strip() for name in ("CapPrm", "CapEff", "CapAmb", "NoNewPrivs")}

    seen = in_child(_with_dropped, probe)
    assert seen == {"CapPrm": "0000000000000000", "CapEff": "0000000000000000",
                    "CapAmb": "0000000000000000", "NoNewPrivs": "1"}


@ROOT_ONLY
def test_descriptors_the_grader_had_open_outlive_the_drop_unless_closed(secret):
    fd = os.open(secret, os.O_RDONLY)  # as a results file or a pipe of grade autograde would be
    try:
        def read_after(close_first):
            if close_first:
                close_fds(keep=[_report["fd"]])
            drop_privileges()
            return attempt(lambda: os.pread(fd, 100, 0))

        assert in_child(read_after, False) == "ok"  # permissions are not checked again on an open file
        assert in_child(read_after, True) == "EBADF"
    finally:
        os.close(fd)


def test_close_fds_keeps_the_standard_streams_and_what_it_is_told():
    def probe():
        keep, lose = os.open(os.devnull, os.O_RDONLY), os.open(os.devnull, os.O_RDONLY)
        close_fds(keep=[keep, _report["fd"]])
        alive = lambda fd: attempt(lambda: os.fstat(fd))  # noqa: E731
        return [alive(0), alive(1), alive(2), alive(keep), alive(lose)]

    assert in_child(probe) == ["ok", "ok", "ok", "ok", "EBADF"]


# --- what it can still do ----------------------------------------------------------------------------
def _lazy_imports():
    sys.modules.pop("decimal", None)
    sys.modules.pop("_pydecimal", None)
    lazy = next(name for name in ("torch._appdirs", "torch.contrib", "torch._python_dispatcher", "torch.onnx")
                if name not in sys.modules)
    return {
        "import decimal": attempt(lambda: __import__("decimal")),
        f"import {lazy}": attempt(lambda: __import__(lazy)),
        "read torch's files": attempt(lambda: open(torch.__file__).read(10)),
        "torch works": attempt(lambda: (torch.ones(3) @ torch.ones(3)).item()),
    }


@ROOT_ONLY
def test_the_runtime_check_predicts_whether_new_imports_work():
    seen = in_child(_with_dropped, _lazy_imports)
    assert seen.pop("torch works") == "ok"  # what the zygote loaded needs no files
    import sysconfig

    # each probe reads one folder: decimal the standard library's, the others torch's (which may lie
    # elsewhere, e.g. in a virtualenv other users can read while the standard library is private)
    stdlib = {sysconfig.get_path("stdlib"), os.path.join(sysconfig.get_path("platstdlib"), "lib-dynload")}
    torch_folder = os.path.dirname(torch.__file__)
    for what, outcome in seen.items():
        folders = stdlib if what == "import decimal" else {torch_folder}
        blocked = any(folder in UNREADABLE_RUNTIME for folder in folders)
        expected = {"ModuleNotFoundError", "EACCES"} if blocked else {"ok"}
        assert outcome in expected, (what, outcome, UNREADABLE_RUNTIME)


@ROOT_ONLY
@pytest.mark.skipif(bool(UNREADABLE_RUNTIME), reason=f"the unprivileged user cannot read this Python: "
                    f"{', '.join(UNREADABLE_RUNTIME)} (install it where others can read it)")
def test_a_dropped_worker_can_import_new_modules_and_use_torch():
    seen = in_child(_with_dropped, _lazy_imports)
    assert set(seen.values()) == {"ok"}, seen


@ROOT_ONLY
def test_the_prepared_working_copy_belongs_to_the_worker_alone(scratch, secret):
    copy = tempfile.mkdtemp(dir=scratch)  # 0700 root, as tempfile.mkdtemp makes the working copy
    os.mkdir(os.path.join(copy, "01_attention_basics"))
    module = os.path.join(copy, "01_attention_basics", "attention_basics.py")
    with open(module, "w") as stream:
        stream.write("def softmax(x):\n    return x\n")
    os.symlink(secret, os.path.join(copy, "01_attention_basics", "peek.py"))
    prepare_workdir(copy, NOBODY, NOBODY)

    for path, mode in ((copy, 0o700), (os.path.dirname(module), 0o700), (module, 0o600)):
        st = os.lstat(path)
        assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (NOBODY, NOBODY, mode), path
    st = os.stat(secret)  # the link was not followed
    assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (0, 0o600)

    def probe():
        drop_privileges()
        os.chdir(os.path.dirname(module))

        def write():
            with open("notes.txt", "w") as stream:
                stream.write("scratch")

        return {"read": attempt(lambda: open(module).read()), "write": attempt(write),
                "through the link": attempt(lambda: open("peek.py").read())}

    assert in_child(probe) == {"read": "ok", "write": "ok", "through the link": "EACCES"}


@ROOT_ONLY
def test_a_working_copy_the_user_cannot_reach_is_refused(scratch):
    closed = tempfile.mkdtemp(dir=scratch)  # 0700 root, like pytest's own tmp_path
    copy = os.path.join(closed, "copy")
    os.mkdir(copy)
    with pytest.raises(ConfinementError, match="cannot reach"):
        prepare_workdir(copy, NOBODY, NOBODY)


# --- hiding the reference ------------------------------------------------------------------------------
def _make_reference(scratch):
    os.chmod(scratch, 0o755)
    solutions = os.path.join(scratch, "solutions")
    os.mkdir(solutions, 0o755)
    os.chmod(solutions, 0o755)
    answer = os.path.join(solutions, "attention_basics.py")
    with open(answer, "w") as stream:
        stream.write("ANSWER = 42\n")
    os.chmod(answer, 0o644)
    return solutions, answer


@ROOT_ONLY
def test_confinement_problems_name_what_is_still_readable(scratch):
    solutions, _ = _make_reference(scratch)
    problems = confinement_problems(hidden=[solutions])
    assert any(solutions in problem and "chmod o-rwx" in problem for problem in problems)
    os.chmod(solutions, 0o750)  # closed to others, as the README recommends without namespaces
    assert not any(solutions in problem for problem in confinement_problems(hidden=[solutions]))
    assert len(confinement_problems()) == len(UNREADABLE_RUNTIME)


# --- workers among themselves ----------------------------------------------------------------------------
def _sleeper(uid, report_fd):
    drop_privileges(uid, NOBODY)
    os.write(report_fd, b"x")
    time.sleep(30)


@ROOT_ONLY
def test_workers_sharing_a_uid_can_signal_each_other_but_not_inspect_each_other():
    reader, writer = os.pipe()
    sleeper = os.fork()
    if sleeper == 0:
        try:
            _sleeper(NOBODY, writer)
        finally:
            os._exit(0)
    os.close(writer)
    try:
        assert os.read(reader, 1) == b"x"

        def probe(uid):
            drop_privileges(uid, NOBODY)
            return {"signal": attempt(lambda: os.kill(sleeper, 0)),
                    "environ": attempt(lambda: open(f"/proc/{sleeper}/environ", "rb").read()),
                    "mem": attempt(lambda: open(f"/proc/{sleeper}/mem", "rb").read(1))}

        # Same uid: signals pass (a dedicated uid per grading is what separates submissions) ...
        assert in_child(probe, NOBODY) == {"signal": "ok", "environ": "EACCES", "mem": "EACCES"}
        # ... another uid: nothing passes.
        assert in_child(probe, unused_uid()) == {"signal": "EPERM", "environ": "EACCES", "mem": "EACCES"}
    finally:
        os.close(reader)
        os.kill(sleeper, signal.SIGKILL)
        os.waitpid(sleeper, 0)


@ROOT_ONLY
def test_kill_all_of_ends_processes_that_left_the_process_group():
    uid = unused_uid()
    reader, writer = os.pipe()
    worker = os.fork()
    if worker == 0:
        try:
            drop_privileges(uid, NOBODY)
            escaped = os.fork()
            if escaped == 0:
                os.setsid()  # out of the worker's process group: killpg no longer reaches it
                time.sleep(30)
                os._exit(0)
            os.write(writer, str(escaped).encode())
            time.sleep(30)
        finally:
            os._exit(0)
    os.close(writer)
    try:
        escaped = int(os.read(reader, 32))
        kill_all_of(uid)
        _, status = os.waitpid(worker, 0)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and _alive(escaped):
            time.sleep(0.02)
        assert not _alive(escaped)
    finally:
        os.close(reader)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stream:
            return stream.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False


# --- without root ---------------------------------------------------------------------------------------
def _unprivileged_view():
    try:
        drop_privileges()
        return {"dropped": "again"}
    except ConfinementError as exc:
        return {"can": can_drop_privileges(), "raised": str(exc), "problems": confinement_problems()}


def _check_unprivileged(seen):
    assert seen["can"] is False
    assert "only root" in seen["raised"]
    assert seen["problems"] and "not run as root" in seen["problems"][0]


@pytest.mark.skipif(os.geteuid() == 0, reason="checked as root by dropping first (the next case)")
def test_without_root_nothing_is_dropped_and_the_grader_is_told():
    _check_unprivileged(_unprivileged_view())


@ROOT_ONLY
def test_after_the_drop_the_worker_is_an_ordinary_user_that_cannot_drop_again():
    _check_unprivileged(in_child(_with_dropped, _unprivileged_view))


def test_dropping_to_root_is_refused():
    with pytest.raises(ConfinementError, match="root"):
        drop_privileges(0, 0)


@ROOT_ONLY
def test_can_drop_privileges_as_root():
    assert can_drop_privileges()
    assert not can_drop_privileges(unused_uid())
    assert can_drop_privileges(unused_uid(), require_account=False)
    assert not can_drop_privileges(0)


def test_readable_by_follows_the_permission_bits(scratch):
    stranger = unused_uid()  # neither this process's user nor nobody
    os.chmod(scratch, 0o700)
    inner = os.path.join(scratch, "open")
    os.mkdir(inner, 0o755)
    os.chmod(inner, 0o755)
    assert readable_by("/tmp", stranger, stranger)
    assert not readable_by(inner, stranger, stranger)  # a closed folder on the way
    assert readable_by(inner, os.geteuid(), os.getegid())  # the owner, or root
    assert not readable_by(os.path.join(scratch, "missing"), os.geteuid(), os.getegid())
    path = os.path.join(inner, "f")
    with open(path, "w"):
        pass
    os.chmod(path, 0o604)  # others may read it, its group may not
    os.chmod(scratch, 0o755)
    group = os.stat(path).st_gid
    assert readable_by(path, stranger, stranger)
    assert not readable_by(path, stranger, group)  # the kernel applies the group's bits, not the others'


# --- wired into the grader ------------------------------------------------------------------------------
def test_the_plan_follows_course_toml_and_names_what_does_not_hold(scratch, monkeypatch):
    import grader.mounts
    from grader.confine import FIRST_UID, plan
    from grader.errors import IsolationError

    never = plan("never")
    assert never.uid is None and never.mode == "same-user" and "never" in never.problems[0]
    os.chmod(scratch, 0o755)  # a secret that others may read
    auto = plan("auto", hidden=[scratch])
    if os.geteuid() != 0:
        assert auto.uid is None and "not run as root" in auto.problems[0]
    elif auto.view:  # the worker's own mount namespace covers the secret: nothing left to say
        assert auto.uid == FIRST_UID + os.getpid() and auto.hide == (scratch,) and auto.problems == ()
        assert plan("required", hidden=[scratch]).mode == "separate-user"
    monkeypatch.setattr(grader.mounts, "_unshare", None)  # no namespaces here: the secret stays readable
    without_view = plan("auto", hidden=[scratch])
    assert not without_view.view and without_view.problems
    with pytest.raises(IsolationError, match="required"):
        plan("required", hidden=[scratch])


def test_the_instructors_log_says_who_student_code_runs_as():
    from grader.autograde import describe_isolation
    from grader.confine import Confinement

    line = describe_isolation(Confinement(None, problems=("the grader does not run as root", "b")))
    assert "grader's own user" in line and "not protected: the grader does not run as root (and 1 more)" in line
    assert "separate user" in describe_isolation(Confinement(FIRST_UID_FOR_TESTS))


FIRST_UID_FOR_TESTS = 2_000_000_000 + 1


PROBE = '''
import json, os, signal, time
seen = {{"uid": os.getuid()}}
def attempt(action):
    try:
        action()
        return "ok"
    except OSError as exc:
        return type(exc).__name__
seen["read secret"] = attempt(lambda: open({secret!r}).read())
seen["signal grader"] = attempt(lambda: os.kill({grader}, signal.SIGTERM))
seen["write results"] = attempt(lambda: open(os.path.join({results!r}, "forged.json"), "w").write("{{}}"))
children = 0
try:
    while children < 400:
        if os.fork() == 0:
            os.setsid()
            time.sleep(60)
            os._exit(0)
        children += 1
except OSError:
    pass
seen["children"] = children
with open(os.path.join({drop!r}, "seen.json"), "w") as stream:
    json.dump(seen, stream)
'''


def grade_probe(course, module, drop, *, need_view=False):
    """Grade assignment 01 from ``module`` (the solution, then a probe that writes what it could do to
    ``drop``/seen.json): the result, what the probe saw, and the grader's confinement."""
    from grader.runner import Grader
    from grader.submission import resolve_submission

    instance = Grader(course, device="cpu")
    try:
        if need_view and not instance.confinement.view:
            pytest.skip(f"no private view here: {instance.confinement.problems}")
        result = instance.grade(resolve_submission(module, course), (course.assignment("01_attention_basics"),),
                                seed=5)
    finally:
        instance.close()
    with open(os.path.join(drop, "seen.json")) as stream:
        return result, json.load(stream), instance.confinement


def _live_processes_of(uid: int, settle: float = 2.0) -> list[int]:
    """The processes of ``uid`` that are not dead (zombies, killed and not yet reaped, are), once they
    have had ``settle`` seconds to die."""
    deadline = time.monotonic() + settle
    while True:
        found = []
        for name in os.listdir("/proc"):
            try:
                if name.isdigit() and os.stat(f"/proc/{name}").st_uid == uid:
                    with open(f"/proc/{name}/stat") as stream:
                        if stream.read().rsplit(")", 1)[1].split()[0] != "Z":
                            found.append(int(name))
            except (FileNotFoundError, ProcessLookupError, IndexError):
                pass
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


@ROOT_ONLY
def test_graded_as_a_user_of_its_own_a_submission_reads_signals_writes_and_forks_nothing(
        course, secret, scratch, tmp_path, monkeypatch):
    """The grader's own path (runner, session, worker) with the drop forced on and no private view
    (what a machine without mount namespaces gets, where `auto` needs a Python that others can read;
    this submission imports nothing new)."""
    import grader.confine
    from grader.confine import NPROC_LIMIT, Confinement

    uid = unused_uid()
    monkeypatch.setattr(grader.confine, "plan", lambda setting, hidden=(): Confinement(uid))
    drop = os.path.join(scratch, "drop")
    os.mkdir(drop)
    os.chmod(drop, 0o1777)
    results = tmp_path / "results"
    results.mkdir()
    os.chmod(tmp_path, 0o755)
    solution = (ROOT_DIR / "solutions" / "01_attention_basics" / "attention_basics.py").read_text()
    probe = PROBE.format(secret=secret, grader=os.getpid(), results=str(results), drop=drop)
    (tmp_path / "attention_basics.py").write_text(solution + probe)
    result, seen, _ = grade_probe(course, tmp_path / "attention_basics.py", drop)
    assert seen["uid"] == uid
    assert seen["read secret"] == "PermissionError"
    assert seen["signal grader"] == "PermissionError"
    assert seen["write results"] == "PermissionError" and not (results / "forged.json").exists()
    assert 0 < seen["children"] < NPROC_LIMIT  # the worker counts too, so does any other of its processes
    assert result.isolation == "separate-user" and result.to_json()["isolation"] == "separate-user"
    assert result.score == result.max_score  # the probe costs nothing: the solution is graded as usual
    assert _live_processes_of(uid) == []  # the forked children, setsid escapees all, are gone


ROOT_DIR = __import__("pathlib").Path(__file__).resolve().parents[2]


REFERENCE = ROOT_DIR / "solutions" / "01_attention_basics" / "attention_basics.py"
PEEK = '''
import json, os
seen = {{"uid": os.getuid(), "grader visible": os.path.exists("/proc/{grader}")}}
try:
    seen["reference"] = open({reference!r}).read()[:40]
except OSError as exc:
    seen["reference"] = type(exc).__name__
import wave  # nothing of the grader's imports this: the Python installation must be readable
seen["imported"] = wave.__name__
with open(os.path.join({drop!r}, "seen.json"), "w") as stream:
    json.dump(seen, stream)
'''


@ROOT_ONLY
def test_in_its_own_view_a_submission_cannot_read_the_reference_nor_see_the_grader(course, scratch, tmp_path):
    """What `auto` gives wherever the grader runs as root with mount namespaces (these machines,
    whose Python lives under a /root that others may not enter, included)."""

    assert os.stat(REFERENCE).st_mode & 0o004  # on disk, others may read it
    assert "wave" not in sys.modules
    drop = os.path.join(scratch, "drop")
    os.mkdir(drop)
    os.chmod(drop, 0o1777)
    os.chmod(scratch, 0o755)
    probe = PEEK.format(grader=os.getpid(), reference=str(REFERENCE), drop=drop)
    (tmp_path / "attention_basics.py").write_text(REFERENCE.read_text() + probe)
    result, seen, confinement = grade_probe(course, tmp_path / "attention_basics.py", drop, need_view=True)
    assert seen["uid"] == confinement.uid
    assert seen["reference"] == "PermissionError"
    assert seen["grader visible"] is False
    assert seen["imported"] == "wave"
    assert result.score == result.max_score and result.isolation == "separate-user"
