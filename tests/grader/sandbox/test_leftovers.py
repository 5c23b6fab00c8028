"""Nothing outlives a grading process killed with SIGKILL (issue 21): its scratch folders and cgroups
are removed by its parent or by the next grader to start (grader/sandbox/leftovers.py), and its sandbox's
processes die with it."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grader.sandbox import leftovers
from grader.sandbox.cgroups import available, candidate_folders
from grader.sandbox.confine import FIRST_UID, UIDS_PER_PROCESS

ROOT = Path(__file__).resolve().parents[3]
SLEEPY = (ROOT / "solutions" / "01_attention_basics" / "attention_basics.py").read_text() + \
    "\nimport time\n_sleep = softmax\ndef softmax(x, dim=-1):\n    time.sleep(60)\n    return _sleep(x, dim)\n"
# right, but slow on each worker's first two calls of softmax (2 s each): a grading long enough to be caught
# mid-submission, and not much longer
SLEEPY_AT_FIRST = SLEEPY.replace("    time.sleep(60)\n", "    global _calls\n    _calls += 1\n    if _calls <= 2:\n"
                                 "        time.sleep(2)\n").replace("_sleep = softmax\n", "_sleep = softmax\n_calls = 0\n")


def submission_processes(grader_pid: int | None = None) -> list[int]:
    """Processes running as a submission's uid, anywhere on this machine; with ``grader_pid``, as a uid of the
    block of that grading process (grader.sandbox.confine.submission_uid: its pid's), so that the gradings of
    tests running beside this one (another pytest worker's) are not counted."""
    low, high = (FIRST_UID, None) if grader_pid is None else \
        (FIRST_UID + grader_pid * UIDS_PER_PROCESS, FIRST_UID + (grader_pid + 1) * UIDS_PER_PROCESS)
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                uid = next(int(line.split()[1]) for line in (entry / "status").read_text().splitlines()
                           if line.startswith("Uid:"))
            except (OSError, StopIteration):
                continue
            if uid >= low and (high is None or uid < high):
                found.append(int(entry.name))
    return found


def cgroups_of(pid: int) -> list[Path]:
    return [p for folder in candidate_folders() for p in folder.glob(f"grade-{pid}-*")]


def wait_for(condition, timeout_s: float = 60.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError("timed out")


def test_only_dead_graders_things_are_swept(tmp_path):
    mine = leftovers.scratch("grade-sandbox", tmp_path)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    theirs = tmp_path / f"grade-autograde-{dead.pid}-{leftovers.namespace()}-abcd"
    theirs.mkdir()
    other = tmp_path / f"someone-{dead.pid}-else"
    other.mkdir()
    assert theirs in leftovers.sweep([tmp_path])
    assert mine.is_dir() and other.is_dir() and not theirs.exists()
    assert mine.name.startswith(f"grade-sandbox-{os.getpid()}-{leftovers.namespace()}-")


def test_a_name_past_any_pid_or_from_another_pid_namespace_is_left_alone(tmp_path):
    """Red team (issue 33): a folder named with a pid past any machine's range stopped every grader at
    start (OverflowError); a pid of another PID namespace (a second grader started with unshare -p, a
    container sharing /tmp) means another process there, so a live grader's folders were taken for dead."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    huge = tmp_path / f"grade-sandbox-99999999999999999999-{leftovers.namespace()}-x"
    elsewhere = tmp_path / f"grade-sandbox-{dead.pid}-{leftovers.namespace() + 1}-x"
    old_style = tmp_path / f"grade-sandbox-{dead.pid}-x"
    for folder in (huge, elsewhere, old_style):
        folder.mkdir()
    assert not [p for p in leftovers.sweep([tmp_path]) if str(p).startswith(str(tmp_path))]
    assert huge.is_dir() and elsewhere.is_dir() and old_style.is_dir()
    assert not leftovers.alive(10 ** 20) and not leftovers.alive(0)


def test_a_cgroup_hierarchy_of_that_name_is_never_shared():
    if available() is not None:
        pytest.skip(available())
    from grader.sandbox.cgroups import make_hierarchy, remove_tree

    name = f"grade-{leftovers.owner_prefix()}-{10 ** 6}"
    hierarchy = make_hierarchy(name)
    try:
        with pytest.raises(FileExistsError):
            make_hierarchy(name)
    finally:
        for folder in hierarchy.folders:
            remove_tree(folder)


def test_grade_check_killed_mid_submission_leaves_nothing_the_next_grader_does_not_remove(tmp_path):
    """SIGKILL to ``grade check`` while the student's code runs: the sandbox and every process of the
    submission die with it; its scratch folder and cgroups stay until the next grader starts."""
    folder = tmp_path / "01_attention_basics"
    folder.mkdir()
    (folder / "attention_basics.py").write_text(SLEEPY)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    check = subprocess.Popen([sys.executable, "-m", "grader", "check", "--submission", str(folder), "--seed", "1"],
                             cwd=ROOT, env={**os.environ, "TMPDIR": str(scratch)}, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    try:
        left = wait_for(lambda: list(scratch.glob(f"grade-sandbox-{check.pid}-*")))
        time.sleep(3)  # the softmax checks sleep in the student's code
    finally:
        check.kill()
        check.wait()
    wait_for(lambda: not submission_processes(check.pid) or None, 10)  # died with its sandbox
    assert all(path.exists() for path in left)
    leftovers.sweep([scratch])  # as the next grader does when it starts
    assert list(scratch.iterdir()) == []
    assert cgroups_of(check.pid) == []


@pytest.mark.slow
def test_autograde_removes_what_a_grading_process_killed_mid_submission_left_and_regrades_it(course, tmp_path):
    """A grading process killed from outside (the OOM killer, an admin): the run removes its cgroups and
    scratch at once, grades its submission again, and the bystander keeps full marks."""
    root = tmp_path / "class"
    for name, text in {"alice": (ROOT / "solutions" / "01_attention_basics" / "attention_basics.py").read_text(),
                       "sam": SLEEPY_AT_FIRST}.items():
        (root / name / "01_attention_basics").mkdir(parents=True)
        (root / name / "01_attention_basics" / "attention_basics.py").write_text(text)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    run = subprocess.Popen([sys.executable, "-m", "grader", "autograde", str(root), "--out", str(tmp_path / "out"),
                            "--workers", "2", "--seed", "5", "--assignment", "01_attention_basics"],
                           cwd=ROOT, env={**os.environ, "TMPDIR": str(scratch)}, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        def busy():  # a grading process mid-submission: its sandbox made, a worker of its running
            # (its working copy is in the sandbox's own folder); whichever of the two it is (the first one
            # may have finished its submission before it was looked at, on a loaded machine)
            children = [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and _parent(p) == run.pid]
            return next((child for child in children if _workers_below(child)
                         and list(scratch.glob(f"grade-sandboxes-{run.pid}-*/grade-sandbox-{child}-*"))), None)

        victim = wait_for(busy)
        os.kill(victim, signal.SIGKILL)
        _, err = run.communicate(timeout=300)
    finally:
        run.kill()
    assert run.returncode == 0, err[-2000:]
    assert list(scratch.iterdir()) == []
    assert cgroups_of(victim) == [] and cgroups_of(run.pid) == []
    import json

    results = {n: json.loads((tmp_path / "out" / f"{n}.json").read_text()) for n in ("alice", "sam")}
    assert results["alice"]["score"] == 100 and results["sam"]["score"] == 100


def _workers_below(pid: int) -> list[int]:
    """The workers (``grade-worker``) among the descendants of ``pid``."""
    parents, names = {}, {}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            parents[int(proc.name)] = _parent(proc)
            try:
                names[int(proc.name)] = (proc / "comm").read_text().strip()
            except OSError:
                continue

    def below(child: int) -> bool:
        for _ in range(64):
            child = parents.get(child)
            if child is None:
                return False
            if child == pid:
                return True
        return False

    return [p for p, name in names.items() if name == "grade-worker" and below(p)]


def _parent(proc: Path) -> int | None:
    try:
        return int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def test_cgroups_of_a_dead_grader_are_emptied_and_removed():
    if available() is not None:
        pytest.skip(available())
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    made = []
    for folder in candidate_folders():
        (folder / f"grade-{dead.pid}-{leftovers.namespace()}-1" / "s1").mkdir(parents=True)
        made.append(folder / f"grade-{dead.pid}-{leftovers.namespace()}-1")
    sleeper = subprocess.Popen(["sleep", "60"])
    (made[0] / "s1" / "cgroup.procs").write_text(str(sleeper.pid))  # a process its death left behind
    removed = leftovers.sweep([])
    assert set(made) <= set(removed) and not any(path.exists() for path in made)
    assert sleeper.wait(timeout=5) == -signal.SIGKILL


def _deep(folder: Path, depth: int) -> None:
    """A folder ``depth`` deep below ``folder``, built by descriptor (its path is longer than any the kernel takes)."""
    fd = os.open(folder, os.O_RDONLY)
    for level in range(depth):
        os.mkdir("d", dir_fd=fd)
        if level % 1000 == 0:
            os.symlink("/etc", "link", dir_fd=fd)
            os.close(os.open("f", os.O_CREAT | os.O_WRONLY, 0o600, dir_fd=fd))
        inner = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = inner
    os.close(fd)


def test_a_tree_deeper_than_python_or_the_kernel_reads_is_removed_and_no_link_is_followed(tmp_path):
    """Red team round 18: a kernel built a 5,000-deep folder in its ipc folder; shutil.rmtree raised
    RecursionError past ignore_errors, the folder stayed, and every later grader's sweep raised on it (no
    grading at all for that user). remove_tree walks it by descriptor: deep, wide, locked, linked."""
    root = tmp_path / "grade-kernel"
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "kept").write_text("x")
    try:
        _deep(root, 6000)
        for index in range(2000):
            (root / "wide" / str(index)).mkdir(parents=True)
        locked = root / "locked"
        (locked / "in").mkdir(parents=True)
        locked.chmod(0)
        (root / "out").symlink_to(outside)
        assert leftovers.remove_tree(root) and not root.exists()
        assert (outside / "kept").read_text() == "x" and os.path.exists("/etc/passwd")
    finally:  # nothing that deep left for pytest's own clean-up, which is shutil.rmtree
        leftovers.remove_tree(root)


def test_a_dead_graders_deep_leftover_is_swept_and_the_sweep_never_raises(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    left = tmp_path / f"grade-kernel-{dead.pid}-{leftovers.namespace()}-abcd"
    (left / "ipc").mkdir(parents=True)
    try:
        _deep(left / "ipc", 5000)
        assert left in leftovers.sweep([tmp_path]) and not left.exists()
    finally:
        leftovers.remove_tree(left)
